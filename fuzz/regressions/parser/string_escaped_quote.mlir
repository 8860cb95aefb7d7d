// Regression (parser_fuzz): string escapes (\" \\ \XX) do not round-trip: the lexer keeps
// them verbatim and the printer escapes the backslash again.
sdy.mesh @m = <["a\"b"=2]>

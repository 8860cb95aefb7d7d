// Regression (parser_fuzz): the printer writes the axis name with \XX hex escapes, the parser
// keeps escapes verbatim, so print(parse(print(m))) != print(m).
sdy.mesh @m = <["é"=2]>

// Regression (parser_fuzz): a float element written "0x" with no digits escaped parse as
// std::invalid_argument from std::stoull (parse_bits), not a ParseError.
func.func @f() -> tensor<2xf16> {
  %0 = stablehlo.constant dense<[0x7C00, 0x]> : tensor<2xf16>
  return %0 : tensor<2xf16>
}

// Regression (parser_fuzz): a hex float element wider than 64 bits escapes parse as
// std::out_of_range from std::stoull (parse_bits), not a ParseError.
func.func @f() -> tensor<f64> {
  %0 = stablehlo.constant dense<0x10000000000000000> : tensor<f64>
  return %0 : tensor<f64>
}

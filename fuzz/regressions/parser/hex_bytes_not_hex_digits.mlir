// Regression (found beside the one above): a raw-bytes dense literal with characters that are not
// hex digits escaped parse as std::invalid_argument from std::stoi ("gg"), or was read in part ("1g" as 1).
func.func @f() -> tensor<2xui8> {
  %0 = stablehlo.constant dense<"0xgg1g"> : tensor<2xui8>
  return %0 : tensor<2xui8>
}

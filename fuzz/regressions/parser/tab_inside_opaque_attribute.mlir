// Regression (parser_fuzz): a tab inside an unknown attribute value joined its words: the value
// `#sdy.sha<TAB>rding<...>` was kept as "#sdy.sharding<...>", which printed and re-parsed as a
// sharding (naming an axis the mesh lacks), so print(parse(print(m))) failed.
sdy.mesh @m = <["a"=2]>
func.func @p(%arg0: tensor<4x8xf32> {y = #sdy.sha	rding<@m, [{"b"}, {}]>}) -> tensor<4x8xf32> {
  return %arg0 : tensor<4x8xf32>
}

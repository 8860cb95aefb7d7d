// print(parse(text)) is a fixed point of print . parse for the conformance files: every piece of
// StableHLO's interpreter tests, and every piece of Shardy's tests that uses only ops Tessera has.
// The printed text also agrees with the source: the same ops, as often (a parser that dropped or
// renamed an op would still reach a fixed point). Pieces that do not parse are counted per file,
// exactly (kShardyCounts), so a piece that stops parsing fails the test, naming its file.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <fstream>
#include <sstream>

#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

namespace fs = std::filesystem;

// The folder CMake was configured with (TESSERA_CONFORMANCE_DIR); this test exists only when it does.
fs::path conformance_dir() { return TESSERA_CONFORMANCE_DIR; }

std::vector<std::string> files_under(const std::string& sub) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(conformance_dir() / sub))
    if (e.path().extension() == ".mlir") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Coverage {
  int round_tripped = 0, unparsed = 0;
};

// The ops a text names, with how often: `stablehlo.x`, `sdy.x`, `check.x` and `chlo.x` words
// (pretty or quoted generic form), outside comments and not attributes (`#sdy.sharding<`,
// `sdy.sharding =`, `@check.expect_close`). Returns are left out: `func.return` prints as `return`,
// and a reduction body of one op and its `stablehlo.return` as `applies stablehlo.add`; a
// `stablehlo.dot` is read as the dot_general it is.
std::map<std::string, int> ops_named(std::string_view text) {
  static const std::regex word(R"((^|[^#\w.@])((stablehlo|sdy|check|chlo)\.[a-z_0-9]+)\b(?!\s*=|<))");
  std::map<std::string, int> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    start = end + 1;
    if (size_t c = line.find("//"); c != std::string::npos) line.resize(c);
    for (auto it = std::sregex_iterator(line.begin(), line.end(), word); it != std::sregex_iterator(); ++it)
      if ((*it)[2].str() == "stablehlo.dot") ++out["stablehlo.dot_general"];  // read as one (parser.cpp)
      else if ((*it)[2].str() != "stablehlo.return") ++out[(*it)[2].str()];
  }
  return out;
}

std::string differences(const std::map<std::string, int>& source, const std::map<std::string, int>& printed) {
  std::string out;
  std::set<std::string> names;
  for (const auto& [k, n] : source) names.insert(k);
  for (const auto& [k, n] : printed) names.insert(k);
  for (const std::string& k : names) {
    int a = source.count(k) ? source.at(k) : 0, b = printed.count(k) ? printed.at(k) : 0;
    if (a != b) out += " " + k + ": " + std::to_string(a) + " in the source, " + std::to_string(b) + " printed;";
  }
  return out;
}

// Round-trips every piece of `path` that parses; a printed form that does not read back, or reads
// back to other text, fails the test.
// Per Shardy file (under shardy-tests/): its pieces that round-trip and those that do not parse.
// Those use Shardy ops Tessera does not read (sdy.propagation_barrier, sdy.data_flow_edge: ops of
// Shardy's own passes, which no exported program holds) or are
// halves of split-file tests that call the functions of the other half.
const std::map<std::string, std::pair<int, int>> kShardyCounts = {
    {"executable_convert_global_to_local/sdy_all_gather.mlir", {1, 1}},
    {"executable_convert_global_to_local/sdy_all_reduce.mlir", {1, 1}},
    {"executable_convert_global_to_local/sdy_all_slice.mlir", {1, 1}},
    {"executable_convert_global_to_local/sdy_all_to_all.mlir", {1, 1}},
    {"executable_convert_global_to_local/sdy_collective_permute_with_self_loops.mlir", {1, 1}},
    {"executable_convert_global_to_local/sdy_collective_permute_without_self_loops.mlir", {1, 1}},
    {"executable_convert_global_to_local/sdy_constant.mlir", {1, 1}},
    {"executable_convert_global_to_local/sdy_reduce_scatter.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_all_gather.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_all_reduce.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_all_to_all.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_collective_permute.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_concatenate.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_convolution_shard_batch.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_convolution_shard_batch_group.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_convolution_shard_contracting_dim.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_convolution_shard_feature_group.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_dot_general.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_fft.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_gather_shard_reduction_dim_is_collapsed.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_gather_shard_reduction_dim_is_collapsed_not_in_start_index_map.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_gather_shard_two_reduction_dims.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_iota.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_pad_non_sharded.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_pad_sharded_non_uniform.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_pad_sharded_uniform.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_reduce_scatter.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_reduce_window.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_scatter_shard_implicit_dim.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_scatter_shard_indexed_inserted_dim.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_select_and_scatter.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_slice.mlir", {1, 1}},
    {"executable_convert_global_to_local/stablehlo_sort.mlir", {1, 1}},
    {"executable_partitioner_pipeline/single_device_add.mlir", {1, 1}},
    {"executable_partitioner_pipeline/single_device_switch.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_dot_general_indivisible.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_indivisible.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_interior.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_large_pad.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_large_pad_within_one_hop.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_left_shift.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_multidim_mixed_shifts.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_multidim_with_hops.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_multiple_hops_right_shift.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_multiple_right_hops.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_replica_id.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_replicated_dual_slice_pad.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_replicated_negative_high_padding.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_replicated_negative_low_padding.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_right_shift.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_single_left_hop.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_pad_single_right_hop.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_reshape_1d_to_2d_split.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_reshape_1d_to_2d_split_2groups.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_reshape_1d_to_2d_split_custom_device_ids.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_reshape_1d_to_2d_split_gap_2.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_reshape_1d_to_2d_split_passthrough_indivisible.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_reshape_2d_split_unrelated_axis.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_reshape_axis_shift.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_reverse_multi_dim_divisible.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_reverse_single_dim_indivisible.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_slice_comm_free.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_slice_indivisible.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_slice_replicated.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_slice_replicated_mesh_2.mlir", {1, 1}},
    {"executable_partitioner_pipeline/stablehlo_slice_with_communication.mlir", {1, 1}},
    {"insert_explicit_reshards/broadcast_in_dim.mlir", {1, 0}},
    {"insert_explicit_reshards/concatenate.mlir", {1, 0}},
    {"insert_explicit_reshards/dot_dot_general.mlir", {1, 0}},
    {"insert_explicit_reshards/elementwise_ops.mlir", {1, 0}},
    {"insert_explicit_reshards/reduce.mlir", {1, 0}},
    {"insert_explicit_reshards/reshape.mlir", {1, 0}},
    {"propagation/aggressive_propagation.mlir", {23, 0}},
    {"propagation/basic_propagation.mlir", {78, 0}},
    {"propagation/basic_propagation_conservative.mlir", {5, 0}},
    {"propagation/op_priority_propagation.mlir", {15, 0}},
    {"propagation/op_sharding_rule_registry.mlir", {1, 0}},
    {"propagation/user_priority_propagation.mlir", {20, 0}},
    {"reshard_to_collectives/reshard_to_collectives.mlir", {1, 0}},
};

Coverage round_trip_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  Coverage c;
  for (const Piece& piece : split_pieces(text)) {
    std::unique_ptr<ir::Module> module;
    try {
      module = parse(piece.text, path, piece.first_line);
    } catch (const ParseError&) {
      ++c.unparsed;
      continue;
    }
    std::string first = print(*module);
    std::string changed = differences(ops_named(piece.text), ops_named(first));
    EXPECT_EQ(changed, "") << path << ":" << piece.first_line << ": the printed ops differ from the source's";
    try {
      std::string second = print(*parse(first, "printed"));
      EXPECT_EQ(second, first) << path << ":" << piece.first_line;
    } catch (const ParseError& e) {
      ADD_FAILURE() << path << ":" << piece.first_line << ": the printed form does not parse: "
                    << e.what() << "\n" << first;
    }
    ++c.round_tripped;
  }
  return c;
}

TEST(ConformanceRoundTrip, EveryStableHloInterpreterPiece) {
  Coverage total;
  for (const std::string& f : files_under("stablehlo-interpret")) {
    Coverage c = round_trip_file(f);
    EXPECT_EQ(c.unparsed, 0) << f;
    total.round_tripped += c.round_tripped;
  }
  EXPECT_EQ(total.round_tripped, 237);
}

TEST(ConformanceRoundTrip, ShardyPiecesWithKnownOps) {
  Coverage total;
  std::string table;  // the lines of kShardyCounts as they are now, printed on a mismatch
  bool mismatch = false;
  for (const std::string& f : files_under("shardy-tests")) {
    Coverage c = round_trip_file(f);
    std::string name = fs::relative(f, conformance_dir() / "shardy-tests").string();
    table += fmt::format("    {{\"{}\", {{{}, {}}}}},\n", name, c.round_tripped, c.unparsed);
    auto it = kShardyCounts.find(name);
    if (it == kShardyCounts.end() || it->second != std::pair{c.round_tripped, c.unparsed}) {
      mismatch = true;
      ADD_FAILURE() << name << ": " << c.round_tripped << " pieces round-tripped and " << c.unparsed
                    << " that do not parse, kShardyCounts says "
                    << (it == kShardyCounts.end() ? std::string("nothing")
                                                  : fmt::format("{} and {}", it->second.first, it->second.second));
    }
    total.round_tripped += c.round_tripped;
    total.unparsed += c.unparsed;
  }
  EXPECT_FALSE(mismatch) << "the counts now:\n" << table;
  EXPECT_EQ(total.round_tripped + total.unparsed, 281);
  RecordProperty("shardy_round_tripped", total.round_tripped);
}

}  // namespace
}  // namespace tessera::stablehlo

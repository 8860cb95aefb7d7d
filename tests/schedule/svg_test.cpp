// The SVG timeline's structure, checked by a small XML reader (no browser is installed here): the
// document is well formed (balanced tags, quoted attributes, escaped text), the root <svg> has a
// positive width and height, there is one <rect> per compute action plus the background, and every
// box lies inside the picture. The reader is itself tested on broken documents, so a malformed
// picture cannot pass.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/simulate.h"
#include "support/strings.h"
#include "support/timeline_svg.h"

namespace tessera::schedule {
namespace {

struct Element {
  std::string name;
  std::map<std::string, std::string> attributes;
  int depth = 0;
};

// Reads an XML document into its elements (in document order); throws std::runtime_error on
// anything malformed. Handles what an SVG writer emits: a prolog, comments, elements, attributes
// in double or single quotes, text with the five predefined entities.
std::vector<Element> read_xml(const std::string& text) {
  std::vector<Element> out;
  std::vector<std::string> open;
  size_t i = 0;
  auto fail = [&](const std::string& why) { throw std::runtime_error(why + " at offset " + std::to_string(i)); };
  auto check_text = [&](size_t from, size_t to) {
    for (size_t k = from; k < to; ++k) {
      if (text[k] == '>') fail("stray '>'");
      if (text[k] != '&') continue;
      size_t semi = text.find(';', k);
      if (semi == std::string::npos) fail("unterminated entity");
      std::string entity = text.substr(k + 1, semi - k - 1);
      if (entity != "amp" && entity != "lt" && entity != "gt" && entity != "quot" && entity != "apos")
        fail("unknown entity &" + entity + ";");
    }
  };
  if (text.compare(0, 5, "<?xml") == 0) {
    i = text.find("?>");
    if (i == std::string::npos) fail("unterminated prolog");
    i += 2;
  }
  bool seen_root = false;
  while (i < text.size()) {
    size_t lt = text.find('<', i);
    if (lt == std::string::npos) lt = text.size();
    check_text(i, lt);
    if (open.empty())
      for (size_t k = i; k < lt; ++k)
        if (!std::isspace(static_cast<unsigned char>(text[k]))) fail("text outside the root element");
    i = lt;
    if (i == text.size()) break;
    if (text.compare(i, 4, "<!--") == 0) {
      i = text.find("-->", i);
      if (i == std::string::npos) fail("unterminated comment");
      i += 3;
      continue;
    }
    if (text.compare(i, 2, "</") == 0) {
      size_t gt = text.find('>', i);
      if (gt == std::string::npos) fail("unterminated end tag");
      std::string name = text.substr(i + 2, gt - i - 2);
      if (open.empty() || open.back() != name) fail("end tag </" + name + "> does not close the open element");
      open.pop_back();
      i = gt + 1;
      continue;
    }
    ++i;
    Element e;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '-' || text[i] == ':'))
      e.name += text[i++];
    if (e.name.empty()) fail("element without a name");
    if (open.empty() && seen_root) fail("a second root element");
    seen_root = true;
    e.depth = static_cast<int>(open.size());
    while (true) {
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      if (i >= text.size()) fail("unterminated start tag");
      if (text[i] == '>') {
        open.push_back(e.name);
        ++i;
        break;
      }
      if (text.compare(i, 2, "/>") == 0) {
        i += 2;
        break;
      }
      std::string key;
      while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '-' || text[i] == ':'))
        key += text[i++];
      if (key.empty() || i + 1 >= text.size() || text[i] != '=' || (text[i + 1] != '"' && text[i + 1] != '\''))
        fail("malformed attribute in <" + e.name + ">");
      char quote = text[i + 1];
      size_t end = text.find(quote, i + 2);
      if (end == std::string::npos) fail("unterminated attribute value");
      check_text(i + 2, end);
      if (text.find('<', i + 2) < end) fail("'<' in an attribute value");
      if (!e.attributes.emplace(key, text.substr(i + 2, end - i - 2)).second) fail("repeated attribute " + key);
      i = end + 1;
    }
    out.push_back(std::move(e));
  }
  if (!open.empty()) throw std::runtime_error("unclosed element <" + open.back() + ">");
  if (!seen_root) throw std::runtime_error("no root element");
  return out;
}

double number(const Element& e, const std::string& key) {
  auto it = e.attributes.find(key);
  if (it == e.attributes.end()) throw std::runtime_error("<" + e.name + "> has no " + key);
  size_t used = 0;
  double v = std::stod(it->second, &used);
  if (used != it->second.size()) throw std::runtime_error(key + "='" + it->second + "' is not a number");
  return v;
}

int64_t drawn_actions(const Schedule& s, const Simulation& sim) {
  int64_t n = 0;
  for (size_t st = 0; st < s.actions.size(); ++st)
    for (size_t i = 0; i < s.actions[st].size(); ++i)
      if (s.actions[st][i].is_compute() && sim.times[st][i].end > sim.times[st][i].start) ++n;
  return n;
}

void check_picture(const Schedule& s, const Costs& c, int64_t expected_boxes) {
  Simulation sim = simulate(s, c);
  ASSERT_EQ(drawn_actions(s, sim), expected_boxes);
  const std::string svg = timeline_svg(s, sim, s.name + " <&> \"timeline\"");
  std::vector<Element> elements = read_xml(svg);
  ASSERT_FALSE(elements.empty());
  const Element& root = elements.front();
  EXPECT_EQ(root.name, "svg");
  EXPECT_EQ(root.attributes.at("xmlns"), "http://www.w3.org/2000/svg");
  const double width = number(root, "width"), height = number(root, "height");
  EXPECT_GT(width, 0);
  EXPECT_GT(height, 0);
  int64_t rects = 0, texts = 0;
  for (const Element& e : elements) {
    if (e.name == "text") ++texts;
    if (e.name != "rect") continue;
    ++rects;
    EXPECT_EQ(e.depth, 1);
    const double x = number(e, "x"), y = number(e, "y"), w = number(e, "width"), h = number(e, "height");
    EXPECT_GE(x, 0);
    EXPECT_GE(y, 0);
    EXPECT_GT(w, 0);
    EXPECT_GT(h, 0);
    EXPECT_LE(x + w, width + 0.01);
    EXPECT_LE(y + h, height + 0.01);
    EXPECT_EQ(e.attributes.at("fill").size(), 7u);  // "#rrggbb"
  }
  EXPECT_EQ(rects, expected_boxes + 1) << "one box per compute action and the background";
  EXPECT_GE(texts, s.stages + 1) << "stage labels and the title";
  // Every stage has its label.
  for (int64_t st = 0; st < s.stages; ++st) EXPECT_NE(svg.find(">stage " + std::to_string(st) + "<"), std::string::npos);
}

TEST(Svg, OneBoxPerComputeAction) {
  check_picture(one_f_one_b(4, 8), Costs{1, 1, 0, 0}, 4 * 8 * 2);
  check_picture(gpipe(2, 3), Costs{1, 2, 0, 0.5}, 2 * 3 * 2);
  check_picture(interleaved(4, 8, 2), Costs{1, 1, 0, 0}, 4 * 2 * 8 * 2);
  check_picture(zero_bubble_h1(4, 6), Costs{1, 1, 1, 0}, 4 * 6 * 3);
  // With w = 0 the weight-gradient boxes would be empty and are left out.
  check_picture(zero_bubble_h1(3, 2), Costs{1, 1, 0, 0}, 3 * 2 * 2);
}

// A makespan under 20 or over 480 units is drawn at a clamped scale, so its plot has a fractional
// width: the declared size is still whole pixels, which is what a browser draws.
TEST(Svg, TheDeclaredSizeIsWholePixels) {
  for (double f : {0.1, 1.0 / 3, 2.63711, 7.77, 400.3}) {
    Schedule s = one_f_one_b(3, 5);
    std::string svg = timeline_svg(s, simulate(s, Costs{f, 2 * f, 0, 0}), "t");
    std::vector<Element> elements = read_xml(svg);
    ASSERT_FALSE(elements.empty());
    for (const char* a : {"width", "height"}) {
      const double v = number(elements.front(), a);
      EXPECT_EQ(v, std::round(v)) << a << " for f = " << f;
    }
  }
}

TEST(Svg, TheTitleIsEscaped) {
  Schedule s = gpipe(1, 1);
  std::string svg = timeline_svg(s, simulate(s, Costs{}), "a<b & \"c\"");
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_EQ(support::xml_escape("<'&'>"), "&lt;&apos;&amp;&apos;&gt;");
}

// The writer's own rules (support/timeline_svg.h), which the trace's picture relies on: a box inside
// another is drawn a lane below it; touching boxes of one fill are drawn as one when one of them is
// under a pixel wide (titled by the first), and apart when both are wider.
TEST(Svg, TheWriterNestsInLanesAndJoinsThinBoxes) {
  support::Timeline t;
  t.px_per_unit = 10;
  t.rows.push_back({"row", {{0, 10, "#111111", "outer", ""},
                            {1, 2, "#222222", "inner", ""},
                            {10, 10.05, "#111111", "thin", ""},
                            {10.05, 20, "#111111", "wide", ""}}});
  const std::string svg = support::timeline_svg(t);
  for (const char* title : {"outer", "inner", "wide"}) EXPECT_NE(svg.find(std::string(">") + title + "<"), std::string::npos);
  EXPECT_EQ(svg.find(">thin<"), std::string::npos) << "joined to the box before it";
  std::vector<Element> rects;
  for (const Element& e : read_xml(svg))
    if (e.name == "rect") rects.push_back(e);
  ASSERT_EQ(rects.size(), 4u) << "the background, outer with thin, wide and inner";
  const Element &outer = rects[1], &wide = rects[2], &inner = rects[3];
  EXPECT_EQ(number(outer, "width"), 100.5);
  EXPECT_EQ(number(wide, "x"), number(outer, "x") + 100.5);
  EXPECT_EQ(number(wide, "y"), number(outer, "y"));
  EXPECT_GT(number(inner, "y"), number(outer, "y") + number(outer, "height") - 0.01) << "a lane below";
}

TEST(Svg, TheReaderRefusesMalformedDocuments) {
  EXPECT_NO_THROW(read_xml("<svg width=\"1\"><rect/><g><text>a &amp; b</text></g></svg>"));
  EXPECT_THROW(read_xml("<svg><rect></svg>"), std::runtime_error);            // unbalanced
  EXPECT_THROW(read_xml("<svg><rect/>"), std::runtime_error);                  // unclosed root
  EXPECT_THROW(read_xml("<svg width=1></svg>"), std::runtime_error);           // unquoted attribute
  EXPECT_THROW(read_xml("<svg><text>a & b</text></svg>"), std::runtime_error); // raw ampersand
  EXPECT_THROW(read_xml("<svg></svg><svg></svg>"), std::runtime_error);        // two roots
  EXPECT_THROW(read_xml("<svg x=\"1\" x=\"2\"></svg>"), std::runtime_error);   // repeated attribute
  EXPECT_THROW(read_xml("<svg><text>a > b</text></svg>"), std::runtime_error); // stray '>'
  Element rect{"rect", {{"width", "12px"}}, 1};
  EXPECT_THROW(number(rect, "width"), std::runtime_error);
  EXPECT_THROW(number(rect, "height"), std::runtime_error);
}

}  // namespace
}  // namespace tessera::schedule

// Reads an SVG file with an XML parser (python3's xml.etree.ElementTree, run as a subprocess) and
// lists what a test checks: each <polyline> series (its <title> and number of x,y pairs), the
// circles of each series' point group (class "points"), the labels of the vertical markers (class
// "marker"), the y-axis tick labels (class "y-tick"), the picture's width and its title (class
// "title": text, x, font size), so a test can check that a chart is well-formed XML and draws what
// it should. python3 comes with scripts/setup (python3-numpy); without it the caller skips.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::testing {

struct SvgSeries {
  bool parsed = false;  // false: not well-formed XML (error holds the parser's message)
  std::string error;
  std::map<std::string, int> points;  // polyline title -> points
  int polylines = 0;
  std::map<std::string, int> circles;  // point group title -> circles
  std::vector<std::string> markers;    // marker labels, in order
  std::vector<double> y_ticks;         // y tick labels, bottom first
  double width = 0;                    // the <svg> width attribute
  std::string title;
  double title_x = 0, title_font_size = 0;
};

// nullopt when python3 is not installed.
inline std::optional<SvgSeries> read_svg_series(const std::string& path) {
  if (std::system("python3 -c 'import xml.etree.ElementTree' >/dev/null 2>&1") != 0) return std::nullopt;
  const std::string script =
      "import sys, xml.etree.ElementTree as ET\n"
      "ns = '{http://www.w3.org/2000/svg}'\n"
      "try:\n"
      "    root = ET.parse(sys.argv[1]).getroot()\n"
      "except ET.ParseError as e:\n"
      "    print('ERROR', e); sys.exit(0)\n"
      "if root.tag != ns + 'svg':\n"
      "    print('ERROR root element is', root.tag); sys.exit(0)\n"
      "print('OK')\n"
      "def name(e):\n"
      "    t = e.find(ns + 'title')\n"
      "    return (t.text if t is not None else '').replace(' ', '_')\n"
      "print('WIDTH', root.get('width'))\n"
      "for t in root.iter(ns + 'text'):\n"
      "    c = t.get('class')\n"
      "    if c == 'title': print('TITLE', t.get('x'), t.get('font-size'), t.text)\n"
      "    if c == 'y-tick': print('YTICK', t.text)\n"
      "for p in root.iter(ns + 'polyline'):\n"
      "    print('POLYLINE', name(p), len(p.get('points', '').split()))\n"
      "for g in root.iter(ns + 'g'):\n"
      "    if g.get('class') == 'points': print('CIRCLES', name(g), len(g.findall(ns + 'circle')))\n"
      "    if g.get('class') == 'marker' and g.find(ns + 'line') is not None:\n"
      "        print('MARKER', g.find(ns + 'text').text)\n";
  const std::string command = "python3 -c \"$(cat <<'PYTHON'\n" + script + "PYTHON\n)\" '" + path + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string output;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) output += buf.data();
  pclose(pipe);
  SvgSeries result;
  std::istringstream lines(output);
  std::string first;
  std::getline(lines, first);
  if (first != "OK") {
    result.error = first.empty() ? output : first;
    return result;
  }
  result.parsed = true;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string kind, name;
    fields >> kind;
    if (kind == "WIDTH") {
      fields >> result.width;
    } else if (kind == "TITLE") {
      fields >> result.title_x >> result.title_font_size;
      std::getline(fields >> std::ws, result.title);
    } else if (kind == "YTICK") {
      double v = 0;
      fields >> v;
      result.y_ticks.push_back(v);
    } else if (kind == "POLYLINE" || kind == "CIRCLES") {
      int count = 0;
      fields >> name >> count;
      if (kind == "POLYLINE") {
        result.points[name] = count;
        ++result.polylines;
      } else {
        result.circles[name] = count;
      }
    } else if (kind == "MARKER") {
      std::getline(fields >> std::ws, name);
      result.markers.push_back(name);
    }
  }
  return result;
}

}  // namespace tessera::testing

// Reads an SVG file with an XML parser (python3's xml.etree.ElementTree, run as a subprocess) and
// lists its <polyline> series: one "NAME POINTS" line per polyline (NAME from its <title>, POINTS
// the number of x,y pairs), so a test can check that a chart is well-formed XML and draws the
// series it should. python3 comes with scripts/setup (python3-numpy); without it the caller skips.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>

namespace tessera::testing {

struct SvgSeries {
  bool parsed = false;  // false: not well-formed XML (error holds the parser's message)
  std::string error;
  std::map<std::string, int> points;  // polyline title -> points
  int polylines = 0;
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
      "for p in root.iter(ns + 'polyline'):\n"
      "    title = p.find(ns + 'title')\n"
      "    name = (title.text if title is not None else '').replace(' ', '_')\n"
      "    print(name, len(p.get('points', '').split()))\n";
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
  for (std::string name; lines >> name;) {
    int count = 0;
    lines >> count;
    result.points[name] = count;
    ++result.polylines;
  }
  return result;
}

}  // namespace tessera::testing

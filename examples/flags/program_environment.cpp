// program_environment_report: the library's collection plus Boost.
#include "flags/program_environment.hpp"

#include <boost/version.hpp>

#include "tessera/run/environment_collection.hpp"

namespace tessera {

EnvironmentReport program_environment_report() {
  EnvironmentReport report = collect_environment_report();
  report.add("libraries", "Boost", std::to_string(BOOST_VERSION / 100000) + "." +
                                       std::to_string(BOOST_VERSION / 100 % 1000) + "." +
                                       std::to_string(BOOST_VERSION % 100));
  return report;
}

}  // namespace tessera

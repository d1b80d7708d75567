// check_settings_agree: equal lists pass; differing ones throw on every rank, naming each setting
// and every rank's value, grouped by value; a setting one rank lacks reads "(not set)".
// tessera-test-ranks: 3
#include "tessera/run/settings_agreement.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tessera/comm/mpi/mpi_communicator.hpp"

namespace tessera {
namespace {

std::string error_of(Communicator& world, const SettingList& settings, const SettingNames& names = {}) {
  try {
    check_settings_agree(world, settings, names);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(SettingsAgreement, EqualListsPass) {
  MpiCommunicator world(MPI_COMM_WORLD);
  EXPECT_EQ(error_of(world, {{"run.lr", "0.001"}, {"run.seed", "1"}}), "");
}

TEST(SettingsAgreement, DifferencesAreNamedWithEveryRanksValue) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const std::string lr = world.rank() == 1 ? "0.002" : "0.001";
  SettingList settings{{"run.lr", lr}, {"run.seed", "1"}};
  if (world.rank() == 2) settings.emplace_back("run.extra", "x");
  const std::string message = error_of(world, settings, SettingNames{{"run.lr", "--lr"}});
  EXPECT_NE(message.find("settings differ across ranks"), std::string::npos) << message;
  EXPECT_NE(message.find("--lr: ranks 0, 2: '0.001'; rank 1: '0.002'"), std::string::npos) << message;
  EXPECT_NE(message.find("run.extra: ranks 0, 1: (not set); rank 2: 'x'"), std::string::npos) << message;
  EXPECT_EQ(message.find("run.seed"), std::string::npos) << message;
}

TEST(SettingsAgreement, ProgramFlagsHideTheirLibraryConsequences) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const std::string lr = world.rank() == 0 ? "0.001" : "0.002";
  const std::string message = error_of(world, {{"--lr", lr}, {"run.lr", lr + "00000005"}});
  EXPECT_NE(message.find("--lr: rank 0: '0.001'; ranks 1, 2: '0.002'"), std::string::npos) << message;
  EXPECT_EQ(message.find("run.lr"), std::string::npos) << message;
}

}  // namespace
}  // namespace tessera

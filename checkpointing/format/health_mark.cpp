// The unhealthy.txt mark beside a checkpoint's meta.h5, written atomically.
#include "tessera/checkpointing/format/health_mark.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"

namespace fs = std::filesystem;

namespace tessera {

void mark_checkpoint_unhealthy(const fs::path& checkpoint, const std::string& reason) {
  const fs::path tmp = checkpoint / (std::string(kUnhealthyMarkName) + ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << reason << "\n";
    out.close();
    if (!out) {
      throw CheckpointError(CheckpointErrorKind::kIo,
                            "cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
  }
  fsync_path(tmp);
  std::error_code ec;
  fs::rename(tmp, checkpoint / kUnhealthyMarkName, ec);
  if (ec) {
    throw CheckpointError(CheckpointErrorKind::kIo, "cannot rename " + tmp.string() + ": " + ec.message());
  }
  fsync_directory(checkpoint);
}

std::optional<std::string> unhealthy_mark(const fs::path& checkpoint) {
  std::ifstream in(checkpoint / kUnhealthyMarkName);
  if (!in) return std::nullopt;
  std::string line(1024, '\0');
  in.getline(line.data(), static_cast<std::streamsize>(line.size()));
  line.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount() - (in.good() ? 1 : 0), 0)));
  return line;
}

bool checkpoint_is_healthy(const fs::path& checkpoint) {
  return read_checkpoint_health((checkpoint / kMetaFileName).string()) == StateHealth::kHealthy &&
         !unhealthy_mark(checkpoint);
}

std::optional<std::string> unhealthy_checkpoint_notice(const fs::path& checkpoint) {
  if (checkpoint_is_healthy(checkpoint)) return std::nullopt;
  const std::optional<std::string> later = unhealthy_mark(checkpoint);
  std::string notice = checkpoint.string() + " is not healthy: " +
                       (later ? *later : "it was saved after a step that was skipped, or whose loss was not finite "
                                         "or stood out");
  const auto all = list_checkpoints(checkpoint.parent_path());
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->path.filename() != checkpoint.filename() && checkpoint_is_healthy(it->path)) {
      return notice + "; the newest healthy checkpoint beside it is " + it->path.string();
    }
  }
  return notice + "; there is no healthy checkpoint beside it";
}

}  // namespace tessera

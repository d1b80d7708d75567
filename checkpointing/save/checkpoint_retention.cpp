// Retention: the newest K, `latest` and the newest confirmed healthy checkpoint stay; the rest are discarded.
#include "tessera/checkpointing/save/checkpoint_retention.hpp"

#include <set>

#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/health_mark.hpp"

namespace fs = std::filesystem;

namespace tessera {

std::optional<fs::path> newest_healthy_checkpoint(const fs::path& dir) {
  const auto all = list_checkpoints(dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (checkpoint_is_healthy(it->path)) return it->path;
  }
  return std::nullopt;
}

std::vector<fs::path> apply_retention(const fs::path& dir, int keep_last, const std::function<void()>& after_rename) {
  std::vector<fs::path> removed;
  if (keep_last <= 0) return removed;
  const auto all = list_checkpoints(dir);
  const std::size_t keep = static_cast<std::size_t>(keep_last);
  if (all.size() <= keep) return removed;
  std::set<fs::path> kept;
  for (std::size_t i = all.size() - keep; i < all.size(); ++i) kept.insert(all[i].path.filename());
  std::error_code ec;
  if (fs::is_symlink(dir / kLatestName, ec)) kept.insert(fs::read_symlink(dir / kLatestName, ec).filename());
  // The newest healthy checkpoint, and when that is the newest of all (its health is confirmed only
  // by the step after it), the healthy one before it too.
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (!checkpoint_is_healthy(it->path)) continue;
    kept.insert(it->path.filename());
    if (it != all.rbegin()) break;
  }
  for (const CommittedCheckpoint& c : all) {
    if (kept.count(c.path.filename()) != 0) continue;
    discard_checkpoint(dir, c.path, after_rename);
    removed.push_back(c.path);
  }
  return removed;
}

}  // namespace tessera

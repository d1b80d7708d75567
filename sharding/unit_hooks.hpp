// UnitHooks: what a wrapped module asks of whoever shards its parameters, around its forward and
// backward. ShardedUnitModule calls these; ShardedEngine implements them (gather, prefetch,
// release, reduce). A UnitUse names the module, so phases can be told by name.
#pragma once

#include <string>
#include <vector>

namespace tessera {

// The units one wrapped module needs (its own, and the owners of its tied parameters), and the
// module's full name ("h.3", "head").
struct UnitUse {
  std::vector<int> units;
  std::string module;
};

class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void before_forward(const UnitUse& use) = 0;
  virtual void after_forward(const UnitUse& use) = 0;
  virtual void before_backward(const UnitUse& use) = 0;
  virtual void after_backward(const UnitUse& use) = 0;
};

}  // namespace tessera

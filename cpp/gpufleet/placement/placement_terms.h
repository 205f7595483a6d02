// What a host adds to node choice: the engine's plugins filter nodes (predicates) and order them
// (node scores) on top of the node's own fit. A PlacementQuery carrying terms has the Placer run
// one scan that asks them, so node choice (scan, node classes, the no-fit reason) stays in
// placement/ while the plugins stay in engine/.
#ifndef GPUFLEET_PLACEMENT_PLACEMENT_TERMS_H_
#define GPUFLEET_PLACEMENT_PLACEMENT_TERMS_H_

#include "gpufleet/accounting/fit.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/node_classes.h"

namespace gpufleet {

class PlacementTerms {
 public:
  virtual ~PlacementTerms() = default;
  // OK, or why `node` may not take `pod`. Asked for nodes whose totals may hold the pod; the
  // no-fit reason asks it for every node, before the node's own Filter.
  virtual FitResult Filter(const Pod& pod, int node) const = 0;
  // The node's score for `pod`: the highest wins, ties to the earlier node.
  virtual double Score(const Pod& pod, int node) const = 0;
  // True when Filter and Score look only at a node's spec (apart from its name) and usage, so
  // that nodes alike in both may be asked once (NodeClasses).
  virtual bool UsesNodeClasses() const = 0;
  // What else Filter and Score look at per node, for nodes of a class to share (null: nothing).
  // The same object for every query of a Placer, or its classes are built again.
  virtual const NodeClassKey* ClassKey() const { return nullptr; }
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_PLACEMENT_TERMS_H_

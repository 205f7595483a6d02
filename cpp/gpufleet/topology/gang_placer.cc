#include "gpufleet/topology/gang_placer.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/topology/domain_fragmentation.h"
#include "gpufleet/topology/node_capacity.h"

namespace gpufleet::topology {
namespace {

struct Item {
  int id;
  int64_t cap;
};

struct Share {
  int id;
  int64_t take;
};

// How `need` units go to children of capacities `items` (in index order), by the rule.
void Distribute(std::vector<Item>& items, int64_t need, Fit fit, bool balanced,
                std::vector<Share>* out) {
  out->clear();
  items.erase(std::remove_if(items.begin(), items.end(), [](const Item& i) { return i.cap <= 0; }),
              items.end());
  auto largest_first = [](const Item& a, const Item& b) {
    return a.cap != b.cap ? a.cap > b.cap : a.id < b.id;
  };
  if (balanced) {
    // The fewest children (largest first) that hold the need, then an even split among them:
    // the smallest take their even part (or all they have), the rest share what remains.
    std::stable_sort(items.begin(), items.end(), largest_first);
    size_t k = 0;
    for (int64_t sum = 0; k < items.size() && sum < need; ++k) sum += items[k].cap;
    items.resize(k);
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return a.cap != b.cap ? a.cap < b.cap : a.id < b.id;
    });
    int64_t left = need;
    for (size_t i = 0; i < items.size() && left > 0; ++i) {
      const int64_t take = std::min<int64_t>(items[i].cap, left / static_cast<int64_t>(items.size() - i));
      if (take > 0) out->push_back({items[i].id, take});
      left -= take;
    }
    std::sort(out->begin(), out->end(), [](const Share& a, const Share& b) { return a.id < b.id; });
    return;
  }
  if (fit == Fit::kFragmentation) {
    // Child by child, the one whose share grows its fragmentation least: children the need
    // empties (a partly used rack completed) before a bite out of an untouched one.
    int64_t most = 1;
    for (const Item& i : items) most = std::max(most, i.cap);
    GangSizes sizes;
    for (int64_t s = 1; s <= most; s *= 2) sizes.emplace_back(s, 1.0);
    std::vector<char> used(items.size(), 0);
    while (need > 0) {
      int pick = -1;
      double pick_score = 0;
      for (size_t k = 0; k < items.size(); ++k) {
        if (used[k]) continue;
        const int64_t take = std::min(items[k].cap, need);
        const double score = DomainFragmentation(items[k].cap, sizes) -
                             DomainFragmentation(items[k].cap - take, sizes) -
                             0.1 * static_cast<double>(items[k].cap - take) / static_cast<double>(most);
        if (pick < 0 || score > pick_score) {
          pick = static_cast<int>(k);
          pick_score = score;
        }
      }
      if (pick < 0) break;
      used[pick] = 1;
      const int64_t take = std::min(items[pick].cap, need);
      out->push_back({items[pick].id, take});
      need -= take;
    }
    return;
  }
  if (fit == Fit::kLeastFreeCapacity) {
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return a.cap != b.cap ? a.cap < b.cap : a.id < b.id;
    });
    for (const Item& i : items) {
      if (need <= 0) break;
      const int64_t take = std::min(i.cap, need);
      out->push_back({i.id, take});
      need -= take;
    }
    return;
  }
  // Largest first; with best fit (and fragmentation) the last child is the smallest that takes
  // the remainder, so the big ones left stay whole.
  std::stable_sort(items.begin(), items.end(), largest_first);
  for (size_t k = 0; k < items.size() && need > 0; ++k) {
    if (items[k].cap >= need && fit != Fit::kLargestFit) {
      size_t pick = k;
      for (size_t j = k + 1; j < items.size(); ++j)
        if (items[j].cap >= need && items[j].cap < items[pick].cap) pick = j;
      out->push_back({items[pick].id, need});
      return;
    }
    const int64_t take = std::min(items[k].cap, need);
    out->push_back({items[k].id, take});
    need -= take;
  }
}

class Search {
 public:
  Search(const ClusterState& state, const Topology& t, const GangRequest& request,
         const PlacementStrategy& strategy, std::vector<ResolvedConstraint> constraints,
         ResolvedConstraint gang)
      : state_(state), t_(t), request_(request), strategy_(strategy), gang_(gang) {
    for (size_t k = 0; k < request.groups.size(); ++k)
      groups_.push_back(Group{&request.groups[k], constraints[k], {}, {}, {}});
  }

  GangPlacement Run() {
    capacity_ = std::make_unique<NodeCapacity>(state_, strategy_);
    scratch_.resize(t_.num_levels() + 1);
    for (Group& g : groups_) Fill(g);
    GangPlacement out;
    const int start = gang_.preferred >= 0 ? gang_.preferred : gang_.required;
    if (start >= 0) {
      const int stop = gang_.required >= 0 ? gang_.required : 0;
      for (int l = start; l >= stop; --l) {
        std::vector<int> candidates = GangCandidates(l);
        for (int d : candidates)
          if (Attempt(l, d, &out)) return out;
      }
      if (gang_.required >= 0) {
        out = GangPlacement{};
        out.reason = absl::StrFormat("topology: no %s domain takes the whole gang%s",
                                     t_.level(gang_.required).name, GangSize());
        return out;
      }
    }
    GangPlacement spread;
    if (Attempt(-1, 0, &spread)) return spread;
    return spread;
  }

 private:
  struct Group {
    const GroupRequest* req;
    ResolvedConstraint c;
    std::vector<int> cap;                // pods per position of the topology's order
    std::vector<int64_t> prefix;         // prefix sums of cap
    std::vector<int64_t> slice_prefix;   // prefix sums of whole slices per slice-level domain
  };

  std::string GangSize() const {
    if (groups_.size() != 1) return absl::StrCat(" (", groups_.size(), " groups)");
    return absl::StrCat(" (", groups_[0].req->count, " pods)");
  }

  void Fill(Group& g) {
    const std::vector<int>& order = t_.order();
    const int positions = static_cast<int>(order.size());
    g.cap.resize(positions);
    g.prefix.resize(positions + 1);
    g.prefix[0] = 0;
    const int limit = g.req->count;
    capacity_->CountAll(g.req->pod, order, limit, g.cap.data());
    for (int p = 0; p < positions; ++p) g.prefix[p + 1] = g.prefix[p] + g.cap[p];
    if (g.c.slice_level >= 0) {
      const int sl = g.c.slice_level, n = t_.num_domains(sl);
      g.slice_prefix.resize(n + 1);
      g.slice_prefix[0] = 0;
      for (int d = 0; d < n; ++d)
        g.slice_prefix[d + 1] =
            g.slice_prefix[d] + (g.prefix[t_.end_pos(sl, d)] - g.prefix[t_.first_pos(sl, d)]) / g.c.slice_size;
    }
  }

  // Domains of level m under domain d of level l (l = -1: the whole topology).
  std::pair<int, int> Under(int l, int d, int m) const {
    int lo = 0, hi = t_.num_domains(0), k = 0;
    if (l >= 0) {
      lo = d;
      hi = d + 1;
      k = l;
    }
    for (; k < m; ++k) {
      lo = t_.first_child(k, lo);
      hi = t_.first_child(k, hi);
    }
    return {lo, hi};
  }
  int FirstPos(int l, int d) const { return l < 0 ? 0 : t_.first_pos(l, d); }
  int EndPos(int l, int d) const {
    return l < 0 ? static_cast<int>(t_.order().size()) : t_.end_pos(l, d);
  }
  int64_t Pods(const Group& g, int l, int d) const {
    return g.prefix[EndPos(l, d)] - g.prefix[FirstPos(l, d)];
  }
  // Units at level l: slices while l is at or above the slice level in force, else pods.
  int64_t Units(const Group& g, int slice, int l, int d) const {
    if (slice < 0 || l > slice) return Pods(g, l, d);
    if (l == slice) return Pods(g, l, d) / g.c.slice_size;
    const auto [lo, hi] = Under(l, d, slice);
    return g.slice_prefix[hi] - g.slice_prefix[lo];
  }
  int64_t Need(const Group& g, int slice, int l) const {
    return slice >= 0 && l <= slice ? g.req->count / g.c.slice_size : g.req->count;
  }

  // Domains of level l that could take every group, in the order the fit rule tries them.
  std::vector<int> GangCandidates(int l) {
    std::vector<int> out;
    for (int d = 0; d < t_.num_domains(l); ++d) {
      bool fits = true;
      for (const Group& g : groups_) fits = fits && Units(g, g.c.slice_level > l ? g.c.slice_level : -1, l, d) >=
                                                        Need(g, g.c.slice_level > l ? g.c.slice_level : -1, l);
      if (fits) out.push_back(d);
    }
    const Group& main = groups_[0];
    std::vector<int64_t> cap(t_.num_domains(l));
    for (int d : out) cap[d] = Pods(main, l, d);
    if (request_.fit == Fit::kFragmentation) {
      const std::vector<double> score = DomainScores(l, out);
      std::vector<size_t> idx(out.size());
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
      std::vector<int> sorted;
      for (size_t i : idx) sorted.push_back(out[i]);
      return sorted;
    }
    std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
      return request_.fit == Fit::kLargestFit ? cap[a] > cap[b] : cap[a] < cap[b];
    });
    return out;
  }

  // The fragmentation rule's scores of candidate domains of level l for the first group.
  std::vector<double> DomainScores(int l, const std::vector<int>& candidates) const {
    const Group& g = groups_[0];
    std::vector<DomainView> views;
    for (int d : candidates) views.push_back(View(g, l, d));
    return ScoreDomains(views, g.req->count, FutureGangSizes(t_, l, g.cap, g.prefix));
  }

  DomainView View(const Group& g, int l, int d) const {
    DomainView v;
    v.free_pods = Pods(g, l, d);
    v.untouched = true;
    v.nodes = EndPos(l, d) - FirstPos(l, d);
    for (int p = FirstPos(l, d); p < EndPos(l, d); ++p) {
      const NodeUsage& u = state_.usage(t_.order()[p]);
      if (u.pods_used > 0) {
        v.untouched = false;
        break;
      }
    }
    return v;
  }

  int ChooseDomain(const Group& g, int slice, int l, int lo, int hi, int64_t need,
                   int64_t* most) const {
    int best = -1;
    int64_t best_cap = 0;
    std::vector<int> fitting;
    for (int d = lo; d < hi; ++d) {
      const int64_t cap = Units(g, slice, l, d);
      *most = std::max(*most, cap);
      if (cap < need) continue;
      fitting.push_back(d);
      const bool better = best < 0 || (request_.fit == Fit::kLargestFit ? cap > best_cap : cap < best_cap);
      if (better) {
        best = d;
        best_cap = cap;
      }
    }
    if (request_.fit == Fit::kFragmentation && fitting.size() > 1) {
      std::vector<DomainView> views;
      for (int d : fitting) views.push_back(View(g, l, d));
      const std::vector<double> score =
          ScoreDomains(views, g.req->count, FutureGangSizes(t_, l, g.cap, g.prefix));
      size_t pick = 0;
      for (size_t i = 1; i < fitting.size(); ++i)
        if (score[i] > score[pick]) pick = i;
      best = fitting[pick];
    }
    return best;
  }

  // Sends `need` units of group g down from domain d of level l to the nodes.
  void Descend(const Group& g, int slice, int l, int d, int64_t need, GroupPlacement* out) {
    int child_slice = slice;
    if (slice >= 0 && l == slice) {
      need *= g.c.slice_size;  // this domain holds its slices: pods from here down
      child_slice = -1;
    }
    const bool balanced = g.c.balanced;
    // Scratch per depth (sized in Run, never resized here: a caller's frame refers to its own).
    std::vector<Item>& items = scratch_[l + 1].items;
    std::vector<Share>& shares = scratch_[l + 1].shares;
    items.clear();
    if (l == t_.num_levels() - 1) {
      for (int p = FirstPos(l, d); p < EndPos(l, d); ++p) items.push_back({p, g.cap[p]});
      Distribute(items, need, request_.fit, balanced, &shares);
      for (const Share& s : shares) out->nodes.emplace_back(t_.order()[s.id], static_cast<int>(s.take));
      return;
    }
    const auto [lo, hi] = Under(l, d, l + 1);
    for (int c = lo; c < hi; ++c) items.push_back({c, Units(g, child_slice, l + 1, c)});
    Distribute(items, need, request_.fit, balanced, &shares);
    // The children's descent reuses deeper scratch only; this level's shares stay intact.
    for (size_t k = 0; k < scratch_[l + 1].shares.size(); ++k) {
      const Share s = scratch_[l + 1].shares[k];
      Descend(g, child_slice, l + 1, s.id, s.take, out);
    }
  }

  // Places group g inside domain d of level l under its own constraint, or says why not.
  bool PlaceGroup(const Group& g, int l, int d, GroupPlacement* out, std::string* why) {
    out->name = g.req->name;
    const int req = g.c.required > l ? g.c.required : -1;
    const int pref = g.c.preferred > l ? g.c.preferred : -1;
    const int slice = g.c.slice_level > l ? g.c.slice_level : -1;
    const int start = pref >= 0 ? pref : req;
    const std::string who = groups_.size() == 1 ? "the gang" : absl::StrCat("group ", g.req->name);
    const std::string what =
        slice >= 0 ? absl::StrFormat("%d slices of %d pods (each within one %s)",
                                     g.req->count / g.c.slice_size, g.c.slice_size, t_.level(slice).name)
                   : absl::StrFormat("%d pods", g.req->count);
    if (start >= 0) {
      const int stop = req >= 0 ? req : l + 1;
      for (int m = start; m >= stop; --m) {
        const auto [lo, hi] = Under(l, d, m);
        int64_t most = 0;
        const int best = ChooseDomain(g, slice, m, lo, hi, Need(g, slice, m), &most);
        if (best >= 0) {
          Descend(g, slice, m, best, Need(g, slice, m), out);
          out->level = m;
          out->domain = best;
          return true;
        }
        if (m == req) {
          *why = absl::StrFormat("topology: no %s domain takes %s: %s (the most one takes is %d)",
                                 t_.level(req).name, who, what, most);
          return false;
        }
      }
    }
    const int64_t have = Units(g, slice, l, d), need = Need(g, slice, l);
    if (have < need) {
      *why = absl::StrFormat("topology: %s needs %s; %s takes %d", who, what,
                             l < 0 ? std::string("the topology") : t_.DomainPath(l, d), have);
      return false;
    }
    out->nodes.reserve(std::min<size_t>(g.req->count, t_.order().size()));
    Descend(g, slice, l, d, need, out);
    out->level = l;
    out->domain = l < 0 ? -1 : d;
    return true;
  }

  bool Attempt(int l, int d, GangPlacement* out) {
    if (dirty_) {
      capacity_ = std::make_unique<NodeCapacity>(state_, strategy_);
      for (Group& g : groups_) Fill(g);
      dirty_ = false;
    }
    *out = GangPlacement{};
    out->level = l;
    out->domain = l < 0 ? -1 : d;
    for (size_t k = 0; k < groups_.size(); ++k) {
      if (k > 0) {
        // Earlier groups took capacity: count again for this shape.
        Fill(groups_[k]);
      }
      GroupPlacement gp;
      std::string why;
      if (!PlaceGroup(groups_[k], l, d, &gp, &why)) {
        out->reason = why;
        return false;
      }
      if (groups_.size() > 1) {
        for (const auto& [node, count] : gp.nodes) capacity_->Add(groups_[k].req->pod, node, count);
        dirty_ = true;
      }
      out->groups.push_back(std::move(gp));
    }
    return true;
  }

  const ClusterState& state_;
  const Topology& t_;
  const GangRequest& request_;
  const PlacementStrategy& strategy_;
  ResolvedConstraint gang_;
  std::vector<Group> groups_;
  std::unique_ptr<NodeCapacity> capacity_;
  bool dirty_ = false;
  struct DepthScratch {
    std::vector<Item> items;
    std::vector<Share> shares;
  };
  std::vector<DepthScratch> scratch_;
};

}  // namespace

std::vector<int> GroupPlacement::PodNodes() const {
  std::vector<int> out;
  for (const auto& [node, count] : nodes) out.insert(out.end(), count, node);
  return out;
}

int GroupPlacement::pods() const {
  int n = 0;
  for (const auto& nc : nodes) n += nc.second;
  return n;
}

std::vector<int> GroupCapacities(const ClusterState& state, const Topology& topology,
                                 const GroupRequest& group, const PlacementStrategy& strategy) {
  NodeCapacity capacity(state, strategy);
  std::vector<int> out(state.num_nodes(), 0);
  for (int node : topology.order()) out[node] = capacity.Count(group.pod, node, group.count);
  return out;
}

absl::StatusOr<GangPlacement> GangPlacer::Choose(const ClusterState& state, const Topology& topology,
                                                 const GangRequest& request,
                                                 const PlacementStrategy& strategy) {
  if (topology.num_nodes() != state.num_nodes() || topology.num_levels() == 0)
    return absl::FailedPreconditionError(
        "topology: built for another set of nodes; build it again from this state");
  ResolvedConstraint gang;
  ASSIGN_OR_RETURN(std::vector<ResolvedConstraint> constraints, ResolveRequest(topology, request, &gang));
  Search search(state, topology, request, strategy, std::move(constraints), gang);
  return search.Run();
}

}  // namespace gpufleet::topology

#include "gpufleet/placement/placer.h"

#include <limits>
#include <map>

#include "absl/strings/str_format.h"
#include "gpufleet/accounting/device_fit.h"

namespace gpufleet {

// How one pod's node scores are found, worked out once per query.
struct QueryScoring {
  using Kind = ScoreTable::Kind;

  const ClusterState& state;
  const Pod& pod;
  const PlacementStrategy& strategy;
  const NodeAdmission& admission;
  const SummaryRequest& request;
  Kind kind;
  bool most;        // summary scores: MostAllocated, else LeastAllocated
  bool needs_plan;  // the strategy scores the devices it would choose

  QueryScoring(const ClusterState& s, const PlacementQuery& q, const NodeAdmission& a,
               const SummaryRequest& r)
      : state(s), pod(q.pod), strategy(q.strategy), admission(a), request(r),
        kind(SummaryScan::ScoresAreExact(s, q.strategy, r) ? Kind::kSummary
             : q.strategy.Deterministic()                  ? Kind::kExact
                                                           : Kind::kFeasible),
        most(q.strategy.AllocationScoreSign() > 0),
        needs_plan(q.strategy.ScoreNeedsPlan()) {}

  // The strategy's score of node i, or kNoNode when the node does not admit the pod. A strategy
  // that scores from a plan gets one, kept in `plan` when given (a strategy with random draws
  // must keep the plan it was scored with).
  double Exact(int i, Placement* plan = nullptr) const {
    if (!needs_plan)
      return admission.Admits(i) ? strategy.ScoreNode(state.View(i), pod, {}) : kNoNode;
    if (!admission.MayAdmit(i)) return kNoNode;
    Placement scratch;
    Placement& p = plan != nullptr ? *plan : scratch;
    p = PlanOnNode(state, pod, i, strategy, Admission::kCapacityOnly);
    return p.ok() ? strategy.ScoreNode(state.View(i), pod, p.allocation.devices) : kNoNode;
  }

  // Node i's entry in a score table of this kind. NaN is stored as kNoNode: it never wins.
  double Entry(int i) const {
    double s = kNoNode;
    switch (kind) {
      case Kind::kSummary:
        if (!SummaryScan::ScoreOne(state, admission, request, most, i, &s)) s = Exact(i);
        break;
      case Kind::kExact:
        s = Exact(i);
        break;
      case Kind::kFeasible:
        s = admission.Admits(i) ? 0.0 : kNoNode;
        break;
    }
    return s == s ? s : kNoNode;
  }
};

namespace {

using Kind = ScoreTable::Kind;

// The order BestThatFits tries nodes in: over a plain array (the full scan) or a cached entry's
// tournament tree. Both name the first node with the highest score above -1, or -1.
struct ArrayRanking {
  double* score;
  int n;
  int Best() const { return FirstBest(score, n); }
  void Drop(int i) { score[i] = kNoNode; }
  void Rebuild() {}
};

struct TreeRanking {
  double* score;
  BestScoreTree* tree;
  int n;
  int Best() const {
    const int best = tree->Best();
    return best >= 0 && score[best] > -1.0 ? best : -1;
  }
  void Drop(int i) {
    score[i] = kNoNode;
    tree->Update(score, i);
  }
  void Rebuild() { tree->Build(score, n); }
};

// Whether node i really takes the pod (the summaries said it may). A node that needs a device
// scan is planned right away, so the winner's devices are fitted once (`planned`).
bool Fits(const QueryScoring& s, int i, Placement* planned) {
  if (!s.admission.MayAdmit(i)) return false;
  if (s.admission.FastOn(i)) return s.admission.DevicesFit(i);
  *planned = PlanOnNode(s.state, s.pod, i, s.strategy, Admission::kCapacityOnly);
  return planned->ok();
}

// The best node by summary `score` that really fits, trying nodes in score order (ties to the
// earlier node); nodes that do not fit are set to kNoNode. The summaries are a necessary
// condition only: the devices decide. After a few misses every remaining candidate is checked at
// once, so the cost never exceeds a plain scan.
constexpr int kMissesBeforeSweep = 8;

template <typename Ranking>
int BestThatFits(const QueryScoring& s, double* score, int n, Ranking& ranking, Placement* planned,
                 int misses_so_far = 0) {
  for (int misses = misses_so_far;; ++misses) {
    if (misses == kMissesBeforeSweep) {
      for (int i = 0; i < n; ++i)
        if (score[i] != kNoNode && !s.admission.Admits(i)) score[i] = kNoNode;
      ranking.Rebuild();
    }
    const int best = ranking.Best();
    if (best < 0 || misses >= kMissesBeforeSweep || Fits(s, best, planned)) return best;
    ranking.Drop(best);
  }
}

// The first node (in `order`) with the best exact score, or -1; `planned` keeps the winner's plan
// when the strategy scores from one.
template <typename Order>
int BestByExactScore(const QueryScoring& s, int total, Order order, Placement* planned) {
  int best = -1;
  double best_score = -1.0;
  Placement scratch;
  for (int k = 0; k < total; ++k) {
    const int i = order(k);
    const double score = s.Exact(i, &scratch);
    if (score > best_score) {
      best_score = score;
      best = i;
      if (s.needs_plan) *planned = scratch;
    }
  }
  return best;
}

// Every node's entry into `score` (kNoNode where the model mask rules a node out). Exact kinds
// score only the nodes the summaries leave in, and return the first best with its plan in
// `planned`; the summary kind returns -1 (its best must still pass the devices).
int FillAll(const QueryScoring& s, SummaryScan& summaries, const uint8_t* models, double* score,
            Placement* planned) {
  const int n = s.state.num_nodes();
  const bool scanned =
      summaries.ScoreAll(s.state, s.admission, s.request, s.most, score).scanned;
  if (models != nullptr)
    for (int i = 0; i < n; ++i)
      if (!models[i]) score[i] = kNoNode;
  if (s.kind == Kind::kSummary) {
    if (!scanned)
      for (int i = 0; i < n; ++i) score[i] = models == nullptr || models[i] ? s.Entry(i) : kNoNode;
    return -1;
  }
  // The summaries (when they could answer) rule nodes out; the strategy scores the rest.
  auto ruled_out = [&](int i) {
    return (scanned && score[i] == kNoNode) || (models != nullptr && !models[i]);
  };
  if (s.kind == Kind::kFeasible) {
    for (int i = 0; i < n; ++i) score[i] = !ruled_out(i) && s.admission.Admits(i) ? 0.0 : kNoNode;
    return -1;
  }
  int best = -1;
  double best_score = -1.0;
  Placement scratch;
  for (int i = 0; i < n; ++i) {
    if (ruled_out(i)) {
      score[i] = kNoNode;
      continue;
    }
    const double v = s.Exact(i, &scratch);
    score[i] = v == v ? v : kNoNode;
    if (v > best_score) {
      best_score = v;
      best = i;
      if (s.needs_plan) *planned = scratch;
    }
  }
  return best;
}

// A strategy with random draws: every node that fits draws a score, in node order, every time;
// the first highest wins.
int BestByDraw(const QueryScoring& s, const double* feasible, int n, Placement* planned) {
  if (s.needs_plan)
    return BestByExactScore(
        s, n, [](int k) { return k; }, planned);  // Exact asks admission again: the plan draws
  int best = -1;
  double best_score = -1.0;
  for (int i = 0; i < n; ++i) {
    if (feasible[i] == kNoNode) continue;
    const double score = s.strategy.ScoreNode(s.state.View(i), s.pod, {});
    if (score > best_score) {
      best_score = score;
      best = i;
    }
  }
  return best;
}

}  // namespace

std::string NoFitReason(const ClusterState& state, const Pod& pod,
                        const std::vector<int>* candidates, const PlacementTerms* terms,
                        const NodeClasses* classes) {
  std::map<std::string, int> counts;
  auto count = [&](int i, int weight) {
    FitResult f = terms != nullptr ? terms->Filter(pod, i) : FitResult::Ok();
    if (f.ok()) f = AdmitNode(state, pod, i, terms ? Admission::kCapacityOnly : Admission::kFull);
    counts[f.ok() ? std::string("no devices satisfy the request") : f.reason] += weight;
  };
  if (candidates != nullptr) {
    for (int i : *candidates) count(i, 1);
    return NodesUnavailable(static_cast<int>(candidates->size()), counts);
  }
  if (classes != nullptr) {
    for (int c : classes->live())
      count(classes->representative(c), static_cast<int>(classes->members(c).size()));
  } else {
    for (int i = 0; i < state.num_nodes(); ++i) count(i, 1);
  }
  return NodesUnavailable(state.num_nodes(), counts);
}

Placement Placer::Choose(const ClusterState& state, const PlacementQuery& q) {
  if (q.misses != nullptr) {
    if (const std::string* why = q.misses->Find(q.miss_key)) return Placement::None(*why);
  }
  Placement p = q.terms != nullptr ? ChooseByTerms(state, q) : ChooseByStrategy(state, q);
  if (!p.ok() && q.misses != nullptr) q.misses->Record(q.miss_key, p.reason, q.miss_version);
  return p;
}

Placement Placer::ChooseByStrategy(const ClusterState& state, const PlacementQuery& q) {
  const NodeAdmission admission(state, q.pod);
  Placement planned;  // a plan made on the way: kept when it is the winner's
  int best = -1;
  if (q.candidates != nullptr) {
    const SummaryRequest request(q.pod);
    const QueryScoring s(state, q, admission, request);
    const std::vector<int>& c = *q.candidates;
    best = BestByExactScore(
        s, static_cast<int>(c.size()), [&c](int k) { return c[k]; }, &planned);
  } else if (!q.use_cache) {
    const SummaryRequest request(q.pod);
    best = FullScan(QueryScoring(state, q, admission, request), &planned);
  } else {
    // The shape's entry keeps what the pod asks in the summaries' terms, worked out once.
    ScoreTable::Entry& e = table_.Find(state, q.strategy, q.pod, q.shape);
    if (!e.request) e.request.emplace(q.pod);
    const QueryScoring s(state, q, admission, *e.request);
    table_.Prepare(state, e, q.pod, s.kind);
    best = CachedScan(s, e, &planned);
  }
  if (best < 0)
    return Placement::None(q.reason ? NoFitReason(state, q.pod, q.candidates) : std::string());
  if (planned.node != best)
    planned = PlanOnNode(state, q.pod, best, q.strategy, Admission::kCapacityOnly);
  return planned;
}

int Placer::FullScan(const QueryScoring& s, Placement* planned) {
  const int n = s.state.num_nodes();
  ScoreTable::Entry& e = table_.Scratch(s.state, s.pod, s.kind);
  // The summary kind: one pass that keeps the first best, and usually that node fits. Scores are
  // stored (a second pass) only when it does not, to try the others in order.
  SummaryScan::Result first;
  if (s.kind == Kind::kSummary && e.models == nullptr)
    first = summaries_.ScoreAll(s.state, s.admission, s.request, s.most, nullptr);
  if (first.scanned && (first.best < 0 || Fits(s, first.best, planned))) return first.best;
  const int best = FillAll(s, summaries_, e.models, e.score.data(), planned);
  if (s.kind == Kind::kExact) return best;
  if (s.kind == Kind::kFeasible) return BestByDraw(s, e.score.data(), n, planned);
  ArrayRanking ranking{e.score.data(), n};
  if (!first.scanned) return BestThatFits(s, e.score.data(), n, ranking, planned);
  ranking.Drop(first.best);
  return BestThatFits(s, e.score.data(), n, ranking, planned, /*misses_so_far=*/1);
}

int Placer::CachedScan(const QueryScoring& s, ScoreTable::Entry& e, Placement* planned) {
  const int n = s.state.num_nodes();
  double* score = e.score.data();
  const bool tree = s.kind != Kind::kFeasible;
  if (e.fresh()) {
    FillAll(s, summaries_, e.models, score, planned);
    ScoreTable::MarkAllSeen(s.state, e);
    if (tree) e.best.Build(score, n);
  } else {
    // One path up the tree per changed node, or one rebuild when many changed (a shape not
    // asked for a while).
    const bool from_log = ScoreTable::Changed(s.state, e, &changed_);
    const bool update = from_log && static_cast<int>(changed_.size()) * 16 <= n;
    for (int i : changed_) {
      score[i] = e.models != nullptr && !e.models[i] ? kNoNode : s.Entry(i);
      if (update && tree) e.best.Update(score, i);
    }
    if (!update && tree) e.best.Build(score, n);
  }
  TreeRanking ranking{score, &e.best, n};
  switch (s.kind) {
    case Kind::kSummary:
      return BestThatFits(s, score, n, ranking, planned);
    case Kind::kExact: {
      const int best = ranking.Best();
      // Scored again right before planning: a strategy may plan for the pod it scored last
      // (fgd does), and a kept score may have come from an earlier pod of this shape.
      if (best >= 0) ScoreOnNode(s.state, s.pod, best, s.strategy);
      return best;
    }
    case Kind::kFeasible:
      return BestByDraw(s, score, n, planned);
  }
  return -1;
}

const NodeClasses& Placer::ClassesFor(const ClusterState& state, const NodeClassKey* more) {
  std::unique_ptr<NodeClasses>& c = classes_.classes;
  if (c == nullptr || !c->Follows(state) || c->more() != more || !c->Sync())
    c = std::make_unique<NodeClasses>(state, more);
  return *c;
}

Placement Placer::ChooseByTerms(const ClusterState& state, const PlacementQuery& q) {
  const PlacementTerms& terms = *q.terms;
  const NodeClasses* classes =
      terms.UsesNodeClasses() ? &ClassesFor(state, terms.ClassKey()) : nullptr;
  const DeviceRequest* gpu = q.pod.Find(kGpu);  // looked up once, not per node
  int best = -1;
  double best_score = -std::numeric_limits<double>::infinity();
  auto consider = [&](int i) {
    if (!QuickMayFit(q.pod, gpu, state.usage(i))) return;
    if (!terms.Filter(q.pod, i).ok()) return;
    const double score = terms.Score(q.pod, i);
    if (score > best_score || (score == best_score && i < best)) {
      best_score = score;
      best = i;
    }
  };
  if (classes != nullptr) {
    for (int c : classes->live()) consider(classes->representative(c));
  } else {
    for (int i = 0; i < state.num_nodes(); ++i) consider(i);
  }
  // The terms judged labels and taints.
  if (best >= 0) return PlanOnNode(state, q.pod, best, q.strategy, Admission::kCapacityOnly);
  return Placement::None(NoFitReason(state, q.pod, nullptr, &terms, classes));
}

Placement Placer::Place(ClusterState& state, const PlacementQuery& q, bool commit) {
  if (state.FindAllocation(q.pod.name) != nullptr)
    return Placement::None(absl::StrFormat("pod %s is already placed", q.pod.name));
  Placement p = Choose(state, q);
  if (!p.ok()) return p;
  absl::Status s = state.Reserve(p.allocation);
  if (s.ok() && commit) s = state.Commit(q.pod.name);
  if (!s.ok()) return Placement::None(std::string(s.message()));
  // The state holds a copy of the plan; only what Reserve and Commit stamp on it differs.
  const Allocation& applied = *state.FindAllocation(q.pod.name);
  p.allocation.state = applied.state;
  p.allocation.assume_time_ns = applied.assume_time_ns;
  if (commit && q.observer != nullptr) q.observer->OnBound(state.node(p.node), q.pod);
  return p;
}

}  // namespace gpufleet

// Queue trees from input: bad trees get one-line errors naming the queue, and the queue objects
// of KAI Scheduler, Kueue and Volcano read as their manifests write them.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gpufleet/queues/queue_json.h"
#include "gpufleet/queues/queue_tree.h"
#include "gtest/gtest.h"

namespace gpufleet::queues {
namespace {

QueueSpec Q(const std::string& name, const std::string& parent,
            std::map<std::string, ResourceQuota> resources = {}) {
  QueueSpec s;
  s.name = name;
  s.parent = parent;
  s.quota.resources = std::move(resources);
  return s;
}

ResourceQuota Guarantee(double g) {
  ResourceQuota r;
  r.guarantee = g;
  r.quota = g;
  return r;
}

TEST(QueueTreeInputTest, BadTreesGetOneLineErrors) {
  ResourceQuota borrow;
  borrow.borrowing_limit = 2;
  ResourceQuota lend;
  lend.quota = 4;
  lend.lending_limit = 2;
  ResourceQuota over;
  over.quota = 8;
  over.limit = 4;
  struct Case {
    const char* name;
    std::vector<QueueSpec> specs;
    std::vector<std::string> parts;
  } const cases[] = {
      {"cycle of parents", {Q("a", "c"), Q("b", "a"), Q("c", "b"), Q("d", "")},
       {"cycle of parents", "a -> c -> b -> a"}},
      {"own parent", {Q("a", "a")}, {"cycle of parents", "a -> a"}},
      {"unknown parent", {Q("a", "nowhere")}, {"queue a", "parent nowhere does not exist"}},
      {"child guarantee above parent's",
       {Q("p", "", {{"gpu", Guarantee(4)}}), Q("c", "p", {{"gpu", Guarantee(8)}})},
       {"queue c", "gpu guarantee 8 is above its parent p's guarantee 4"}},
      {"children's guarantees above parent's",
       {Q("p", "", {{"gpu", Guarantee(4)}}), Q("c1", "p", {{"gpu", Guarantee(3)}}),
        Q("c2", "p", {{"gpu", Guarantee(3)}})},
       {"queue p", "children's gpu guarantees add up to 6"}},
      {"borrowing limit without a cohort", {Q("a", "", {{"gpu", borrow}})},
       {"queue a", "borrowing limit needs a cohort"}},
      {"lending limit without a cohort", {Q("a", "", {{"gpu", lend}})},
       {"queue a", "lending limit needs a cohort"}},
      {"quota above limit", {Q("a", "", {{"gpu", over}})}, {"queue a", "gpu quota 8 is above its limit 4"}},
      {"twice", {Q("a", ""), Q("a", "")}, {"queue a", "appears twice"}},
  };
  for (const Case& c : cases) {
    const absl::Status s = ValidateQueueTree(c.specs);
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_FALSE(absl::StrContains(s.message(), "\n")) << c.name;
    for (const std::string& p : c.parts)
      EXPECT_TRUE(absl::StrContains(s.message(), p)) << c.name << ": " << s.message();
  }
}

TEST(QueueTreeInputTest, TreeShape) {
  auto t = QueueTree::Build({Q("team-b", "dept"), Q("dept", ""), Q("team-a", "dept"),
                             Q("solo", ""), Q("sub", "team-a")});
  ASSERT_TRUE(t.ok()) << t.status();
  const int dept = t->Find("dept"), a = t->Find("team-a"), b = t->Find("team-b"),
            sub = t->Find("sub"), solo = t->Find("solo");
  EXPECT_EQ(t->parent(a), dept);
  EXPECT_EQ(t->depth(sub), 2);
  EXPECT_TRUE(t->leaf(sub));
  EXPECT_FALSE(t->leaf(a));
  EXPECT_EQ(t->CommonAncestor(sub, b), dept);
  EXPECT_EQ(t->CommonAncestor(sub, solo), -1);
  EXPECT_EQ(t->AncestorAt(sub, 1), a);
  // Parents before children, siblings in order of appearance (creation 0 = order given).
  std::vector<int> pos(t->size());
  for (size_t i = 0; i < t->top_down().size(); ++i) pos[t->top_down()[i]] = static_cast<int>(i);
  EXPECT_LT(pos[dept], pos[a]);
  EXPECT_LT(pos[a], pos[sub]);
  EXPECT_EQ(t->children(dept), (std::vector<int>{b, a}));
}

TEST(QueueTreeInputTest, GpufleetFields) {
  auto s = QueueSpecFromJson(Json::parse(R"({
      "name": "team-a", "parent": "dept", "weight": 2, "priority": 3,
      "quota": {"gpu": 8, "cpu": "64", "memory": "256Gi", "nvidia.com/mig-1g.10gb": 4},
      "limit": {"gpu": 12, "cpu": "unlimited"}, "guarantee": {"gpu": 2},
      "borrowing_limit": {"gpu": 4}, "lending_limit": {"gpu": 6},
      "over_quota_weight": {"gpu": 3}, "capability": {"nvidia.com/gpu": 10},
      "reclaim_within_cohort": "LowerPriority",
      "borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": 100}})"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->parent, "dept");
  EXPECT_EQ(s->quota.priority, 3);
  const ResourceQuota& g = s->quota.resources.at("gpu");
  EXPECT_EQ(g.quota, 8);
  EXPECT_EQ(g.limit, 10);  // the capability is tighter than the limit
  EXPECT_EQ(g.guarantee, 2);
  EXPECT_EQ(g.borrowing_limit, 4);
  EXPECT_EQ(g.lending_limit, 6);
  EXPECT_EQ(g.over_quota_weight, 3);
  EXPECT_EQ(s->quota.resources.at("cpu").quota, 64000);
  EXPECT_EQ(s->quota.resources.at("memory").quota, 256.0 * (1 << 30));
  EXPECT_EQ(s->quota.resources.at("mig-1g.10gb").quota, 4);
  EXPECT_EQ(s->quota.reclaim_within_cohort, CohortPreemption::kLowerPriority);
  EXPECT_TRUE(s->quota.borrow_within_cohort);
  EXPECT_EQ(s->quota.borrow_priority_threshold, 100);
  // Round trip through the writer.
  Json back = {{"name", "team-a"}, {"weight", 2}};
  WriteQuotaFields(s->parent, s->quota, &back);
  auto again = QueueSpecFromJson(back);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->quota, s->quota);

  EXPECT_FALSE(QueueSpecFromJson(Json::parse(R"({"name": "x", "qouta": {}})")).ok());
  auto bad = QueueSpecFromJson(Json::parse(R"({"name": "x", "quota": {"gpu": -2}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "queue x: quota.gpu")) << bad.status();
}

TEST(QueueTreeInputTest, KaiQueueObjects) {
  auto out = QueuesFromObjects(Json::parse(R"([
    {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "dept-ml"},
     "spec": {"resources": {"gpu": {"quota": 8, "limit": 12, "overQuotaWeight": 1}}}},
    {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "team-nlp"},
     "spec": {"parentQueue": "dept-ml", "priority": 100,
              "resources": {"gpu": {"quota": 4, "limit": 8, "overQuotaWeight": 2},
                            "cpu": {"quota": 1000, "limit": -1, "overQuotaWeight": 1},
                            "memory": {"quota": 2000, "limit": -1, "overQuotaWeight": 1}}}}])"));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  auto nlp = QueueSpecFromJson((*out)[1]);
  ASSERT_TRUE(nlp.ok()) << nlp.status();
  EXPECT_EQ(nlp->parent, "dept-ml");
  EXPECT_EQ(nlp->quota.priority, 100);
  EXPECT_EQ(nlp->quota.resources.at("gpu").quota, 4);
  EXPECT_EQ(nlp->quota.resources.at("gpu").limit, 8);
  EXPECT_EQ(nlp->quota.resources.at("gpu").over_quota_weight, 2);
  EXPECT_EQ(nlp->quota.resources.at("cpu").quota, 1000);  // millicores: one core
  EXPECT_EQ(nlp->quota.resources.at("cpu").limit, kUnlimited);
  EXPECT_EQ(nlp->quota.resources.at("memory").quota, 2e9);  // megabytes
}

TEST(QueueTreeInputTest, KueueObjects) {
  auto out = QueuesFromObjects(Json::parse(R"([
    {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "team-a"},
     "spec": {"cohort": "org", "fairSharing": {"weight": "2"},
              "preemption": {"reclaimWithinCohort": "Any",
                             "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100}},
              "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
                {"name": "a100", "resources": [{"name": "cpu", "nominalQuota": 9},
                                               {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 4, "lendingLimit": 2}]},
                {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "500m"},
                                               {"name": "nvidia.com/gpu", "nominalQuota": 4, "borrowingLimit": 0, "lendingLimit": 1}]}]}]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Cohort", "metadata": {"name": "org"},
     "spec": {"parent": "root-org"}}])"));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);  // the implicit cohort root-org is added
  EXPECT_EQ((*out)[2]["name"], "root-org");
  auto a = QueueSpecFromJson((*out)[0]);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->parent, "org");
  EXPECT_EQ(a->weight, 2);
  EXPECT_EQ(a->quota.resources.at("gpu").quota, 12);
  EXPECT_EQ(a->quota.resources.at("gpu").borrowing_limit, 4);
  EXPECT_EQ(a->quota.resources.at("gpu").lending_limit, 3);
  EXPECT_EQ(a->quota.resources.at("cpu").quota, 9500);
  EXPECT_EQ(a->quota.resources.at("cpu").borrowing_limit, kUnlimited);
  EXPECT_EQ(a->quota.reclaim_within_cohort, CohortPreemption::kAny);
  EXPECT_TRUE(a->quota.borrow_within_cohort);
  EXPECT_EQ(a->quota.borrow_priority_threshold, 100);
  std::vector<QueueSpec> specs;
  for (const Json& j : *out) specs.push_back(*QueueSpecFromJson(j));
  EXPECT_TRUE(ValidateQueueTree(specs).ok());
}

TEST(QueueTreeInputTest, VolcanoQueueObjects) {
  auto out = QueuesFromObjects(Json::parse(R"([
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "eng"},
     "spec": {"parent": "root", "reclaimable": true, "weight": 2,
              "deserved": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": 16},
              "capability": {"nvidia.com/gpu": 24}, "guarantee": {"resource": {"nvidia.com/gpu": 4}}}},
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "eng-ml"},
     "spec": {"parent": "eng", "deserved": {"nvidia.com/gpu": 8}, "guarantee": {"resource": {"nvidia.com/gpu": 8}}}}])"));
  ASSERT_TRUE(out.ok()) << out.status();
  auto eng = QueueSpecFromJson((*out)[0]);
  ASSERT_TRUE(eng.ok()) << eng.status();
  EXPECT_EQ(eng->parent, "");  // below Volcano's root
  EXPECT_EQ(eng->quota.resources.at("gpu").quota, 16);
  EXPECT_EQ(eng->quota.resources.at("gpu").limit, 24);
  EXPECT_EQ(eng->quota.resources.at("gpu").guarantee, 4);
  EXPECT_EQ(eng->quota.resources.at("cpu").quota, 64000);
  std::vector<QueueSpec> specs = {*eng, *QueueSpecFromJson((*out)[1])};
  const absl::Status s = ValidateQueueTree(specs);
  EXPECT_TRUE(absl::StrContains(s.message(), "queue eng-ml: gpu guarantee 8 is above its parent eng's guarantee 4"))
      << s;
}

TEST(QueueTreeInputTest, ObjectsOfOtherKindsAreRefused) {
  auto out = QueuesFromObjects(Json::parse(
      R"([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}])"));
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(absl::StrContains(out.status().message(), "is not a queue")) << out.status();
}

}  // namespace
}  // namespace gpufleet::queues

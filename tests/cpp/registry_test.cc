// Registries by name: the expected placement strategies exist, no name is registered twice,
// unknown names list the known ones, and "name(key=value, ...)" specs parse into JSON parameters.
#include "gpufleet/core/registry.h"

#include <limits>
#include <memory>
#include <string>

#include "gpufleet/placement/strategy.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::IsError;
using test::IsOk;

TEST(RegistryTest, ExpectedStrategiesExist) {
  const auto& registry = Registry<PlacementStrategy>::Global();
  for (const char* name : {"binpack", "spread", "topology"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(registry.Contains(name));
    EXPECT_FALSE(registry.Info(name)->description.empty());
    auto s = MakeStrategy(name);
    ASSERT_TRUE(IsOk(s));
    EXPECT_NE(s->get(), nullptr);
  }
  std::vector<std::string> names = registry.Names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_GE(names.size(), 3u);
}

TEST(RegistryTest, NoDuplicateNames) {
  EXPECT_TRUE(Registry<PlacementStrategy>::Global().DuplicateNames().empty());
}

TEST(RegistryTest, UnknownStrategyListsKnownNames) {
  auto s = MakeStrategy("no-such-strategy");
  EXPECT_TRUE(IsError(s, absl::StatusCode::kNotFound,
                      {"unknown placement strategy \"no-such-strategy\"; known: ", "binpack",
                       "spread", "topology"}));
}

TEST(RegistryTest, StrategiesRejectUnknownParameters) {
  EXPECT_TRUE(IsError(MakeStrategy("binpack(weight=2)"), absl::StatusCode::kInvalidArgument,
                      {"binpack: unknown parameter \"weight\""}));
  EXPECT_TRUE(IsError(MakeStrategy("spread(x=1)"), absl::StatusCode::kInvalidArgument,
                      {"spread: unknown parameter \"x\""}));
  EXPECT_TRUE(IsError(MakeStrategy("topology("), absl::StatusCode::kInvalidArgument,
                      {"missing closing parenthesis"}));
  EXPECT_TRUE(IsOk(MakeStrategy("binpack()")));
}

struct WidgetTraits {
  bool round = false;
  Json ToJson() const { return {{"round", round}}; }
};

struct Widget : Registrant<WidgetTraits> {
  static constexpr char kKind[] = "widget";
  int size = 0;
};

absl::StatusOr<std::unique_ptr<Widget>> MakeWidget(const Params& p) {
  auto size = p.Get<int>("size");
  if (!size.ok()) return size.status();
  auto w = std::make_unique<Widget>();
  w->size = *size;
  return w;
}

Registration<WidgetTraits> WidgetInfo(std::string name, std::string description) {
  return {.name = std::move(name),
          .description = std::move(description),
          .params = {{"size", ParamType::kInt, 1, "widget size"}}};
}

GPUFLEET_REGISTER(Widget, WidgetInfo("registered-by-macro", "a test widget"), MakeWidget);

TEST(RegistryTest, MacroRegistersGlobally) {
  EXPECT_TRUE(Registry<Widget>::Global().Contains("registered-by-macro"));
  EXPECT_EQ(Registry<Widget>::Global().Info("registered-by-macro")->description, "a test widget");
  EXPECT_FALSE(Registry<Widget>::Global().Info("absent").ok());
}

TEST(RegistryTest, RegisterCreateAndDuplicates) {
  Registry<Widget> r;
  EXPECT_TRUE(r.Register(WidgetInfo("b", "second"), MakeWidget));
  EXPECT_TRUE(r.Register(WidgetInfo("a", "first"), MakeWidget));
  EXPECT_FALSE(r.Register(WidgetInfo("a", "again"), MakeWidget));
  EXPECT_EQ(r.DuplicateNames(), std::vector<std::string>{"a"});
  EXPECT_EQ(r.Info("a")->description, "first");  // the first registration stays
  EXPECT_EQ(r.Names(), (std::vector<std::string>{"a", "b"}));

  auto w = r.Create("a", Json{{"size", 7}});
  ASSERT_TRUE(IsOk(w));
  EXPECT_EQ((*w)->size, 7);
  auto d = r.Create("b", Json());  // null parameters read as {}
  ASSERT_TRUE(IsOk(d));
  EXPECT_EQ((*d)->size, 1);
  EXPECT_TRUE(IsError(r.Create("zzzz"), absl::StatusCode::kNotFound,
                      {"unknown widget \"zzzz\"; known: a, b"}));
  EXPECT_TRUE(IsError(r.Create("a", Json::array({1})), absl::StatusCode::kInvalidArgument,
                      {"widget \"a\": parameters must be an object"}));
  EXPECT_TRUE(IsError(r.Create("a", Json{{"size", "big"}}), absl::StatusCode::kInvalidArgument,
                      {"a: parameter \"size\" has the wrong type", "\"big\"", "expected int"}));
  EXPECT_TRUE(IsError(r.Create("a", Json{{"colour", 1}}), absl::StatusCode::kInvalidArgument,
                      {"a: unknown parameter \"colour\"; known: size"}));
  // A near miss gets a suggestion; a value out of the factory's range is still its error.
  EXPECT_TRUE(IsError(r.Create("a", Json{{"sise", 1}}), absl::StatusCode::kInvalidArgument,
                      {"unknown parameter \"sise\" (did you mean \"size\"?)"}));
  EXPECT_TRUE(IsError(r.Create("a", Json{{"size", int64_t{1} << 40}}),
                      absl::StatusCode::kInvalidArgument, {"a: parameter \"size\""}));
  EXPECT_TRUE(IsError(r.Create("bb"), absl::StatusCode::kNotFound,
                      {"unknown widget \"bb\" (did you mean \"b\"?); known: a, b"}));
}

TEST(RegistryTest, MetadataListsParametersWithDefaults) {
  Registry<Widget> r;
  auto info = WidgetInfo("w", "a widget");
  info.traits.round = true;
  ASSERT_TRUE(r.Register(info, MakeWidget));
  auto got = r.Info("w");
  ASSERT_TRUE(IsOk(got));
  EXPECT_EQ(got->description, "a widget");
  ASSERT_EQ(got->params.size(), 1u);
  EXPECT_EQ(got->params[0].name, "size");
  EXPECT_EQ(got->params[0].default_value, Json(1));
  EXPECT_TRUE(got->traits.round);
  EXPECT_EQ(got->traits.ToJson(), (Json{{"round", true}}));
  EXPECT_TRUE(IsError(r.Info("absent"), absl::StatusCode::kNotFound, {"unknown widget"}));
  EXPECT_EQ(r.Infos().size(), 1u);
}

// What an object says about itself comes from the registration it was built from, never from a
// restatement in its class.
TEST(RegistryTest, BuiltObjectsReadTheirNameAndTraitsFromTheRegistration) {
  Registry<Widget> r;
  auto round = WidgetInfo("round", "a round widget");
  round.traits.round = true;
  ASSERT_TRUE(r.Register(round, MakeWidget));
  ASSERT_TRUE(r.Register(WidgetInfo("square", "a square widget"), MakeWidget));
  auto a = r.Create("round");
  auto b = r.Create("square");
  ASSERT_TRUE(IsOk(a));
  ASSERT_TRUE(IsOk(b));
  EXPECT_EQ((*a)->name(), "round");
  EXPECT_TRUE((*a)->traits().round);
  EXPECT_EQ((*b)->name(), "square");
  EXPECT_FALSE((*b)->traits().round);
  // Built by other means: no name, the default traits, until a registration adopts it.
  auto own = std::make_unique<Widget>();
  EXPECT_EQ(own->name(), "");
  EXPECT_FALSE(own->traits().round);
  auto adopted = r.Adopt("round", std::move(own));
  ASSERT_TRUE(IsOk(adopted));
  EXPECT_EQ((*adopted)->name(), "round");
  EXPECT_TRUE((*adopted)->traits().round);
  EXPECT_TRUE(IsError(r.Adopt("oval", std::make_unique<Widget>()), absl::StatusCode::kNotFound,
                      {"unknown widget \"oval\""}));
}

// Plain ranges are declared in the ParamSpec and checked before the factory runs.
TEST(RegistryTest, DeclaredRangesAreCheckedBeforeTheFactory) {
  std::vector<ParamSpec> declared = {
      {.name = "count", .type = ParamType::kInt, .default_value = 1, .help = "h",
       .range = {.at_least = 0}},
      {.name = "ratio", .type = ParamType::kNumber, .default_value = 0.5, .help = "h",
       .range = {.at_least = 0, .at_most = 1}},
      {.name = "period", .type = ParamType::kNumber, .help = "h", .range = {.above = 0}},
      {.name = "weight", .type = ParamType::kNumber, .help = "h",
       .range = {.at_least = 0, .finite = true}},
      {.name = "limits", .type = ParamType::kNumberList, .help = "h", .range = {.above = 0}},
      {.name = "mode", .type = ParamType::kString, .default_value = "fast", .help = "h",
       .one_of = {"fast", "slow"}}};
  auto check = [&](Json given) { return CheckDeclaredParams(declared, given, "w"); };
  auto ok = check({{"count", 0}, {"ratio", 1}, {"period", 0.1}, {"limits", {1, 2}}});
  ASSERT_TRUE(IsOk(ok));
  EXPECT_EQ((*ok)["mode"], "fast");
  EXPECT_TRUE(IsError(check({{"count", -1}}), absl::StatusCode::kInvalidArgument,
                      {"w: \"count\" must be >= 0, got -1"}));
  EXPECT_TRUE(IsError(check({{"ratio", 1.5}}), absl::StatusCode::kInvalidArgument,
                      {"w: \"ratio\" must be in [0, 1], got 1.5"}));
  EXPECT_TRUE(IsError(check({{"period", 0}}), absl::StatusCode::kInvalidArgument,
                      {"w: \"period\" must be > 0, got 0"}));
  EXPECT_TRUE(IsError(check({{"period", std::numeric_limits<double>::quiet_NaN()}}),
                      absl::StatusCode::kInvalidArgument, {"w: \"period\" must be > 0"}));
  // Infinity is in a range unless it is declared finite (or a bound excludes it).
  EXPECT_TRUE(IsOk(check({{"period", std::numeric_limits<double>::infinity()}})));
  EXPECT_TRUE(IsError(check({{"weight", std::numeric_limits<double>::infinity()}}),
                      absl::StatusCode::kInvalidArgument,
                      {"w: \"weight\" must be a finite number >= 0"}));
  EXPECT_TRUE(IsError(check({{"weight", -1}}), absl::StatusCode::kInvalidArgument,
                      {"w: \"weight\" must be a finite number >= 0, got -1"}));
  EXPECT_TRUE(IsError(check({{"limits", {3, -2}}}), absl::StatusCode::kInvalidArgument,
                      {"w: \"limits\"[1] must be > 0, got -2"}));
  EXPECT_TRUE(IsError(check({{"mode", "medium"}}), absl::StatusCode::kInvalidArgument,
                      {"w: \"mode\" must be one of \"fast\", \"slow\", got \"medium\""}));
  EXPECT_EQ(RangeText(declared[0]), ">= 0");
  EXPECT_EQ(RangeText(declared[1]), "in [0, 1]");
  EXPECT_EQ(RangeText(declared[2]), "> 0");
  EXPECT_EQ(RangeText(declared[3]), "finite, >= 0");
  EXPECT_EQ(RangeText({.name = "x", .range = {.above = 0, .at_most = 2}}), "in (0, 2]");
  EXPECT_EQ(RangeText({.name = "x", .range = {.at_most = 2}}), "<= 2");
  EXPECT_EQ(RangeText({.name = "x"}), "");
}

TEST(RegistryTest, ParseSpecWithListsAndStrings) {
  auto spec = ParseSpec("las(queue_limits=[3250,7200], x=\"a\")");
  ASSERT_TRUE(IsOk(spec));
  EXPECT_EQ(spec->first, "las");
  EXPECT_EQ(spec->second, (Json{{"queue_limits", {3250, 7200}}, {"x", "a"}}));

  auto plain = ParseSpec("  fifo ");
  ASSERT_TRUE(IsOk(plain));
  EXPECT_EQ(plain->first, "fifo");
  EXPECT_EQ(plain->second, Json::object());

  auto empty_args = ParseSpec("srtf()");
  ASSERT_TRUE(IsOk(empty_args));
  EXPECT_EQ(empty_args->first, "srtf");
  EXPECT_EQ(empty_args->second, Json::object());

  auto mixed = ParseSpec(
      "gittins(bins = 10, rate=0.5, on=true, mode=fast, text=\"a,b\", nested={\"k\":[1,2]})");
  ASSERT_TRUE(IsOk(mixed));
  EXPECT_EQ(mixed->first, "gittins");
  EXPECT_EQ(mixed->second, (Json{{"bins", 10},
                                 {"rate", 0.5},
                                 {"on", true},
                                 {"mode", "fast"},
                                 {"text", "a,b"},
                                 {"nested", {{"k", {1, 2}}}}}));
}

TEST(RegistryTest, ParseSpecErrorsQuoteTheSpec) {
  struct Bad {
    const char* spec;
    const char* why;
  };
  const Bad cases[] = {
      {"", "empty name"},
      {"   ", "empty name"},
      {"(x=1)", "empty name"},
      {"las(x=1", "missing closing parenthesis"},
      {"las(x)", "\"x\" is not key=value"},
      {"las(=1)", "empty key"},
      {"las(x=[1,2)", "unbalanced brackets or quotes"},
      {"las(x=\"a)", "unbalanced brackets or quotes"},
      {"las(x=1,,y=2)", "is not key=value"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.spec);
    EXPECT_TRUE(IsError(ParseSpec(b.spec), absl::StatusCode::kInvalidArgument,
                        {std::string("spec \"") + b.spec + "\"", b.why}));
  }
}

TEST(RegistryTest, CheckKnownParamsAndParam) {
  EXPECT_TRUE(IsOk(CheckKnownParams(Json::object(), "las", {"queue_limits"})));
  EXPECT_TRUE(IsOk(CheckKnownParams(Json{{"queue_limits", 1}}, "las", {"queue_limits"})));
  EXPECT_TRUE(IsError(CheckKnownParams(Json{{"queue_limit", 1}}, "las", {"queue_limits", "x"}),
                      absl::StatusCode::kInvalidArgument,
                      {"las: unknown parameter \"queue_limit\"; known: queue_limits, x"}));
  EXPECT_TRUE(IsOk(CheckKnownParams(Json(), "las", {"x"})));
  EXPECT_TRUE(IsError(CheckKnownParams(Json::array({1, 2}), "las", {"x"}),
                      absl::StatusCode::kInvalidArgument, {"las: parameters must be an object"}));
  Json p = {{"limits", {1, 2}}, {"name", "q"}};
  auto limits = Param<std::vector<int>>(p, "las", "limits", {});
  ASSERT_TRUE(IsOk(limits));
  EXPECT_EQ(*limits, (std::vector<int>{1, 2}));
  EXPECT_EQ(Param<int>(p, "las", "absent", 42).value(), 42);
  EXPECT_TRUE(IsError(Param<int>(p, "las", "name", 0), absl::StatusCode::kInvalidArgument,
                      {"las: parameter \"name\" has the wrong type"}));
}

}  // namespace
}  // namespace gpufleet

// The Volcano Command (bus.volcano.sh/v1alpha1), what `vcctl job suspend|resume` and `vcctl queue
// operate` create: served as Volcano's CRD declares it (config/crd/volcano/bases/
// bus.volcano.sh_commands.yaml in volcano-sh/volcano), so that kubectl and vcctl find it, and its
// CRD for real clusters accepts what Volcano's does and refuses what it refuses.

#include <string>
#include <string_view>
#include <vector>

#include "apiserver/descriptors/crds.h"
#include "apiserver/descriptors/openapi.h"
#include "apiserver/descriptors/resources.h"
#include "apiserver/descriptors/tables.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/parse.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::apiserver {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const value* CommandField(const value& v, std::initializer_list<std::string_view> keys) {
  const value* cur = &v;
  for (std::string_view key : keys) {
    if (cur == nullptr || !cur->is_object()) return nullptr;
    cur = cur->as_object().if_contains(key);
  }
  return cur;
}

std::vector<std::string> CommandStrings(const value* v) {
  std::vector<std::string> out;
  if (v == nullptr || !v->is_array()) return out;
  for (const value& s : v->as_array()) out.emplace_back(s.is_string() ? s.as_string() : "?");
  return out;
}

const ResourceInfo& CommandsResource() {
  const ResourceInfo* info = FindResource("bus.volcano.sh", "v1alpha1", "commands");
  EXPECT_NE(info, nullptr);
  return *info;
}

TEST(CommandResourceTest, ServedAsVolcanosCrdDeclaresIt) {
  const ResourceInfo& commands = CommandsResource();
  EXPECT_EQ(commands.kind, "Command");
  EXPECT_EQ(commands.singular, "command");
  EXPECT_TRUE(commands.namespaced);
  EXPECT_FALSE(commands.builtin);
  EXPECT_THAT(commands.short_names, IsEmpty());
  EXPECT_THAT(commands.subresources, IsEmpty());
  EXPECT_EQ(FindByKind("bus.volcano.sh/v1alpha1", "Command"), &commands);
  EXPECT_EQ(commands.StoreResource(), "commands.bus.volcano.sh");
}

TEST(CommandResourceTest, KubectlGetShowsNameAndAge) {
  const ResourceInfo& commands = CommandsResource();
  value table = ToTable(commands, {}, "1", 1714564800);  // 2024-05-01T12:00:00Z
  std::vector<std::string> names;
  for (const value& c : CommandField(table, {"columnDefinitions"})->as_array()) {
    names.emplace_back(c.as_object().at("name").as_string());
  }
  EXPECT_THAT(names, ElementsAre("Name", "Age"));
  value command = boost::json::parse(R"({"metadata":{"name":"train-abortjob-x7k2p",
      "creationTimestamp":"2024-05-01T11:59:30Z"},"action":"AbortJob"})");
  EXPECT_EQ(TableCells(commands, command, 1714564800), (array{"train-abortjob-x7k2p", "30s"}));
}

TEST(CommandResourceTest, OpenApiDescribesActionAndTarget) {
  value doc = BuildOpenApiDocument("bus.volcano.sh", "v1alpha1");
  const value* schema =
      CommandField(doc, {"components", "schemas", "sh.volcano.bus.v1alpha1.Command"});
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(SchemaName(CommandsResource()), "sh.volcano.bus.v1alpha1.Command");
  EXPECT_EQ(*CommandField(*schema, {"properties", "action", "type"}), "string");
  EXPECT_THAT(CommandStrings(CommandField(*schema, {"properties", "target", "required"})),
              ElementsAre("apiVersion", "kind", "name", "uid"));
  const value* gvk = CommandField(*schema, {"x-kubernetes-group-version-kind"});
  ASSERT_NE(gvk, nullptr);
  EXPECT_EQ(*CommandField(gvk->as_array()[0], {"kind"}), "Command");
}

// Volcano's CRD: no printer columns, no subresources, the target an atomic OwnerReference whose
// four identifying fields are required.
TEST(CommandResourceTest, CrdIsCompatibleWithVolcanos) {
  value crd = CustomResourceDefinition(CommandsResource());
  ASSERT_TRUE(crd.is_object());
  EXPECT_EQ(*CommandField(crd, {"metadata", "name"}), "commands.bus.volcano.sh");
  EXPECT_EQ(*CommandField(crd, {"spec", "scope"}), "Namespaced");
  EXPECT_EQ(*CommandField(crd, {"spec", "names", "listKind"}), "CommandList");
  EXPECT_EQ(CommandField(crd, {"spec", "names", "shortNames"}), nullptr);
  const value& version = CommandField(crd, {"spec", "versions"})->as_array().at(0);
  EXPECT_EQ(*CommandField(version, {"name"}), "v1alpha1");
  EXPECT_EQ(CommandField(version, {"subresources"}), nullptr);
  EXPECT_EQ(CommandField(version, {"additionalPrinterColumns"}), nullptr);
  const value* schema = CommandField(version, {"schema", "openAPIV3Schema", "properties"});
  ASSERT_NE(schema, nullptr);
  for (const char* field : {"action", "reason", "message"}) {
    EXPECT_EQ(*CommandField(*schema, {field, "type"}), "string") << field;
  }
  EXPECT_EQ(*CommandField(*schema, {"metadata"}), (object{{"type", "object"}}));
  const value* target = CommandField(*schema, {"target"});
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(*CommandField(*target, {"x-kubernetes-map-type"}), "atomic");
  EXPECT_THAT(CommandStrings(CommandField(*target, {"required"})),
              ElementsAre("apiVersion", "kind", "name", "uid"));
  EXPECT_EQ(*CommandField(*target, {"properties", "controller", "type"}), "boolean");
}

}  // namespace
}  // namespace muster::apiserver

#include "sim/trace.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::sim {
namespace {

using ::testing::HasSubstr;

// A temporary file removed with the fixture.
class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/muster-trace-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST_F(TraceTest, LoadsOpenbPods) {
  std::string path = Write(
      "pods.csv",
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\r\n"
      "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\r\n"
      "openb-pod-0001,6000,12288,1,460,V100M16|V100M32,LS,Pending,427061,12902960,\r\n"
      "\r\n"
      "openb-pod-0002,88000,327680,8,1200,,BE,Succeeded,10,20,11\r\n");
  auto pods = LoadOpenbPods(path);
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_EQ((*pods)[0].name, "openb-pod-0000");
  EXPECT_EQ((*pods)[0].cpu_milli, 12000);
  EXPECT_EQ((*pods)[1].gpu_milli, 460);
  EXPECT_EQ((*pods)[1].gpu_spec, "V100M16|V100M32");
  EXPECT_EQ((*pods)[1].creation_time, 427061);
  EXPECT_FALSE((*pods)[1].scheduled_time.has_value());  // empty: never scheduled
  EXPECT_EQ((*pods)[2].gpu_milli, 1000);                // above 1000 reads as one whole GPU
  EXPECT_EQ((*pods)[2].num_gpu, 8);
}

TEST_F(TraceTest, MultigpuStyleFilesHaveNoTimes) {
  auto pods = LoadOpenbPods(Write("p.csv",
                                  "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                  "a,1000,100,0,0\n"));
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_FALSE((*pods)[0].creation_time.has_value());
}

TEST_F(TraceTest, ErrorsNameTheFileTheLineAndTheColumn) {
  std::string header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  std::string unknown = Write("unknown.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour\n");
  EXPECT_THAT(Message(LoadOpenbPods(unknown).status()),
              HasSubstr("unknown.csv:1: unknown column \"colour\" (known: name, cpu_milli"));
  std::string missing = Write("missing.csv", "name,cpu_milli,memory_mib,gpu_milli\n");
  EXPECT_THAT(Message(LoadOpenbPods(missing).status()),
              HasSubstr("missing.csv:1: missing column \"num_gpu\""));
  std::string bad = Write("bad.csv", header + "a,1000,100,0,0\nb,1000,100,two,0\n");
  EXPECT_THAT(Message(LoadOpenbPods(bad).status()),
              HasSubstr("bad.csv:3: column num_gpu: \"two\" is not an integer"));
  std::string negative = Write("neg.csv", header + "a,-5,100,0,0\n");
  EXPECT_THAT(Message(LoadOpenbPods(negative).status()),
              HasSubstr("neg.csv:2: column cpu_milli: -5 is negative"));
  std::string short_row = Write("short.csv", header + "a,1000,100\n");
  EXPECT_THAT(Message(LoadOpenbPods(short_row).status()),
              HasSubstr("short.csv:2: 3 fields where the header has 5"));
  std::string empty = Write("empty.csv", header);
  EXPECT_THAT(Message(LoadOpenbPods(empty).status()), HasSubstr("empty.csv: no pods in the trace"));
  std::string blank = Write("blank.csv", "");
  EXPECT_THAT(Message(LoadOpenbPods(blank).status()), HasSubstr("blank.csv: empty file"));
  auto absent = LoadOpenbPods(dir_ + "/absent.csv");
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(absent.status()), HasSubstr("absent.csv: cannot open the file"));
}

TEST_F(TraceTest, LoadsNodes) {
  auto nodes = LoadOpenbNodes(Write("nodes.csv",
                                    "sn,cpu_milli,memory_mib,gpu,model\n"
                                    "openb-node-0000,64000,262144,2,P100\n"
                                    "openb-node-0001,96000,786432,0,\n"));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ((*nodes)[0].gpus, 2);
  EXPECT_EQ((*nodes)[0].model, "P100");
  EXPECT_EQ((*nodes)[1].gpus, 0);
  auto no_model = LoadOpenbNodes(Write("n2.csv", "sn,cpu_milli,memory_mib,gpu,model\nx,1,1,4,\n"));
  EXPECT_THAT(Message(no_model.status()), HasSubstr("n2.csv:2: column model: empty"));
}

TEST_F(TraceTest, LoadsPhillyJobs) {
  auto jobs = LoadPhillyJobs(Write("philly.csv",
                                   "timestamp,duration,num_gpus,gpu_time,cluster\n"
                                   "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
                                   "2017-10-09 06:13:03,2951.0,16,47216.0,6214e9\n"));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ((*jobs)[0].submit_time, 1507532515);  // date -u -d '2017-10-09 07:01:55' +%s
  EXPECT_DOUBLE_EQ((*jobs)[1].duration, 2951);
  EXPECT_EQ((*jobs)[1].gpus, 16);
  EXPECT_EQ((*jobs)[1].cluster, "6214e9");
  auto bad_time = LoadPhillyJobs(Write("p2.csv",
                                       "timestamp,duration,num_gpus,gpu_time,cluster\n"
                                       "2017-13-09 07:01:55,66.0,1,66.0,x\n"));
  EXPECT_THAT(Message(bad_time.status()),
              HasSubstr("p2.csv:2: column timestamp: \"2017-13-09 07:01:55\" is not"));
  auto bad_duration = LoadPhillyJobs(Write("p3.csv",
                                           "timestamp,duration,num_gpus,gpu_time,cluster\n"
                                           "2017-10-09 07:01:55,long,1,66.0,x\n"));
  EXPECT_THAT(Message(bad_duration.status()),
              HasSubstr("p3.csv:2: column duration: \"long\" is not a number"));
}

}  // namespace
}  // namespace muster::sim

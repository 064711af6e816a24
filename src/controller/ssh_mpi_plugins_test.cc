// The ssh and mpi job plugins (ssh_mpi_plugins.cc) and the key pair they hand out (ssh_keys.h).

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <string>

#include "absl/strings/escaping.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "controller/job_plugins.h"
#include "controller/job_pods.h"
#include "controller/ssh_keys.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// An MPI job as the Job webhook leaves it: mpi, with svc and ssh beside it.
constexpr char kMpiJob[] = R"({"metadata": {"name": "mj", "namespace": "ns", "uid": "u"},
  "spec": {"minAvailable": 3, "plugins": {"mpi": [], "ssh": [], "svc": []},
    "tasks": [
      {"name": "master", "replicas": 1, "template": {"spec": {
        "initContainers": [{"name": "prep"}],
        "containers": [{"name": "launcher", "ports": [{"containerPort": 22}]}]}}},
      {"name": "worker", "replicas": 2, "template": {"spec": {
        "containers": [{"name": "w"}]}}}]}})";

Job DecodeMpiJob(std::string_view text = kMpiJob) {
  absl::StatusOr<Job> job = DecodeJob(json::parse(text).as_object());
  EXPECT_TRUE(job.ok()) << job.status();
  return *job;
}

json::object PodMadeBy(std::string_view plugin, const std::vector<std::string>& args,
                       const Job& job, size_t task, int index) {
  PluginBuild build = MakePlugin(plugin, args);
  EXPECT_NE(build.plugin, nullptr);
  EXPECT_EQ(build.problem, "");
  json::object pod = MakePod(job, task, index);
  if (build.plugin) build.plugin->OnPodCreate(job, task, index, pod);
  return pod;
}

const json::value& Container(const json::object& pod, std::string_view list, size_t i) {
  return pod.at("spec").at(list).as_array().at(i);
}

std::string ContainerEnv(const json::value& container, std::string_view name) {
  const json::value* env = container.as_object().if_contains("env");
  if (env == nullptr) return "<absent>";
  for (const json::value& e : env->as_array()) {
    if (e.at("name").as_string() == name) return std::string(e.at("value").as_string());
  }
  return "<absent>";
}

std::string Decoded(const json::object& secret, std::string_view key) {
  std::string out;
  const json::value* v = secret.at("data").as_object().if_contains(key);
  if (v == nullptr) return "<absent>";
  EXPECT_TRUE(absl::Base64Unescape(std::string(v->as_string()), &out)) << key;
  return out;
}

// --- ssh -----------------------------------------------------------------------------------------

TEST(SshPluginTest, MountsTheKeyFilesAtRootSshInEveryContainer) {
  Job job = DecodeMpiJob();
  json::object pod = PodMadeBy("ssh", {}, job, 0, 0);
  EXPECT_EQ(json::serialize(pod.at("spec").at("volumes")),
            R"([{"name":"mj-ssh","secret":{"secretName":"mj-ssh","items":[)"
            R"({"key":"id_rsa","path":".ssh/id_rsa"},)"
            R"({"key":"id_rsa.pub","path":".ssh/id_rsa.pub"},)"
            R"({"key":"authorized_keys","path":".ssh/authorized_keys"},)"
            R"({"key":"config","path":".ssh/config"}],"defaultMode":384}}])");
  const std::string mount = R"([{"mountPath":"/root/.ssh","subPath":".ssh","name":"mj-ssh"}])";
  EXPECT_EQ(json::serialize(Container(pod, "containers", 0).at("volumeMounts")), mount);
  EXPECT_EQ(json::serialize(Container(pod, "initContainers", 0).at("volumeMounts")), mount);

  // Elsewhere than /root/.ssh the files are readable by all (mode 0644).
  json::object other = PodMadeBy("ssh", {"--ssh-key-file-path=/home/mpi/.ssh"}, job, 1, 0);
  EXPECT_EQ(other.at("spec").at("volumes").at(0).at("secret").at("defaultMode"), 420);
  EXPECT_EQ(Container(other, "containers", 0).at("volumeMounts").at(0).at("mountPath"),
            "/home/mpi/.ssh");
}

TEST(SshPluginTest, SecretHasTheConfigAndANewKeyPairDrawnOnlyWhenCreated) {
  Job job = DecodeMpiJob();
  PluginBuild build = MakePlugin("ssh", {});
  ASSERT_NE(build.plugin, nullptr);
  std::vector<PluginObject> objects = build.plugin->Objects(job);
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0].resource, "secrets");
  const json::object& listed = objects[0].object;
  EXPECT_EQ(listed.at("metadata").at("name"), "mj-ssh");
  EXPECT_EQ(listed.at("metadata").at("ownerReferences").at(0).at("kind"), "Job");
  EXPECT_EQ(Decoded(listed, "config"),
            "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
            "Host mj-master-0\n  HostName mj-master-0.mj\n  Port 22\n"
            "Host mj-worker-0\n  HostName mj-worker-0.mj\n  Port 22\n"
            "Host mj-worker-1\n  HostName mj-worker-1.mj\n  Port 22\n");
  EXPECT_EQ(Decoded(listed, "id_rsa"), "<absent>");  // listing draws no key
  ASSERT_TRUE(objects[0].complete_on_create);

  json::object first = listed;
  ASSERT_TRUE(objects[0].complete_on_create(first).ok());
  const std::string private_key = Decoded(first, "id_rsa");
  const std::string public_key = Decoded(first, "id_rsa.pub");
  EXPECT_THAT(private_key, StartsWith("-----BEGIN RSA PRIVATE KEY-----\n"));
  EXPECT_THAT(public_key, StartsWith("ssh-rsa AAAAB3NzaC1yc2EAAAADAQAB"));  // e = 65537
  EXPECT_EQ(public_key.back(), '\n');
  EXPECT_EQ(Decoded(first, "authorized_keys"), public_key);

  // The public half is the private key's: read back with OpenSSL, 2048 bits.
  BIO* bio = BIO_new_mem_buf(private_key.data(), static_cast<int>(private_key.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(EVP_PKEY_get_bits(key), 2048);
  std::string e, n;
  for (auto [name, out] : {std::pair{OSSL_PKEY_PARAM_RSA_E, &e}, {OSSL_PKEY_PARAM_RSA_N, &n}}) {
    BIGNUM* bn = nullptr;
    ASSERT_EQ(EVP_PKEY_get_bn_param(key, name, &bn), 1);
    out->resize(static_cast<size_t>(BN_num_bytes(bn)));
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out->data()));
    BN_free(bn);
  }
  EVP_PKEY_free(key);
  EXPECT_EQ(SshRsaAuthorizedKey(e, n), public_key);

  json::object second = listed;
  ASSERT_TRUE(objects[0].complete_on_create(second).ok());
  EXPECT_NE(Decoded(second, "id_rsa"), private_key);  // every Job its own pair
}

TEST(SshPluginTest, AuthorizedKeyIsTheWireFormInBase64) {
  // "ssh-rsa", e = 65537 and a modulus whose top bit is set (mpint: a zero byte in front).
  std::string wire("\0\0\0\7ssh-rsa\0\0\0\3\1\0\1\0\0\0\3\0\x80\x01", 25);
  EXPECT_EQ(SshRsaAuthorizedKey(std::string("\1\0\1", 3), std::string("\x80\x01", 2)),
            "ssh-rsa " + absl::Base64Escape(wire) + "\n");
  // Leading zero bytes of a magnitude are not written.
  std::string small("\0\0\0\7ssh-rsa\0\0\0\1\3\0\0\0\1\x7f", 21);
  EXPECT_EQ(SshRsaAuthorizedKey(std::string("\0\3", 2), std::string("\x7f", 1)),
            "ssh-rsa " + absl::Base64Escape(small) + "\n");
}

TEST(SshPluginTest, ArgumentsGiveAPairOfOnesOwnAndThePort) {
  Job job = DecodeMpiJob();
  PluginBuild build = MakePlugin(
      "ssh", {"--ssh-private-key=PRIVATE", "--ssh-public-key=ssh-rsa PUB", "--ssh-port=2026"});
  ASSERT_NE(build.plugin, nullptr);
  EXPECT_EQ(build.problem, "");
  std::vector<PluginObject> objects = build.plugin->Objects(job);
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_FALSE(objects[0].complete_on_create);
  EXPECT_EQ(Decoded(objects[0].object, "id_rsa"), "PRIVATE");
  EXPECT_EQ(Decoded(objects[0].object, "id_rsa.pub"), "ssh-rsa PUB");
  EXPECT_EQ(Decoded(objects[0].object, "authorized_keys"), "ssh-rsa PUB");
  EXPECT_THAT(Decoded(objects[0].object, "config"), HasSubstr("  Port 2026\n"));

  PluginBuild bad = MakePlugin("ssh", {"--ssh-port=-10"});
  ASSERT_NE(bad.plugin, nullptr);
  EXPECT_EQ(bad.problem, "invalid ssh port -10, falling back to default port 22 ...");
  EXPECT_THAT(Decoded(bad.plugin->Objects(job)[0].object, "config"), HasSubstr("  Port 22\n"));
}

// --- mpi -----------------------------------------------------------------------------------------

TEST(MpiPluginTest, MasterGetsTheWorkerHostsAndEveryContainerThePort) {
  Job job = DecodeMpiJob();
  json::object master = PodMadeBy("mpi", {}, job, 0, 0);
  for (std::string_view list : {"containers", "initContainers"}) {
    EXPECT_EQ(ContainerEnv(Container(master, list, 0), "MPI_HOST"),
              "mj-worker-0.mj,mj-worker-1.mj")
        << list;
  }
  // The launcher had port 22 open already; the init container gets it.
  EXPECT_EQ(json::serialize(Container(master, "containers", 0).at("ports")),
            R"([{"containerPort":22}])");
  EXPECT_EQ(json::serialize(Container(master, "initContainers", 0).at("ports")),
            R"([{"name":"mpijob-port","containerPort":22}])");

  json::object worker = PodMadeBy("mpi", {}, job, 1, 1);
  EXPECT_EQ(ContainerEnv(Container(worker, "containers", 0), "MPI_HOST"), "<absent>");
  EXPECT_EQ(json::serialize(Container(worker, "containers", 0).at("ports")),
            R"([{"name":"mpijob-port","containerPort":22}])");
}

TEST(MpiPluginTest, ArgumentsRenameRolesAndPort) {
  Job job = DecodeMpiJob(R"({"metadata": {"name": "mj", "namespace": "ns", "uid": "u"},
    "spec": {"tasks": [
      {"name": "launcher", "replicas": 1, "template": {"spec": {"containers": [{"name": "l"}]}}},
      {"name": "node", "replicas": 3, "template": {"spec": {"hostname": "n", "subdomain": "net",
        "containers": [{"name": "w"}]}}}]}})");
  json::object launcher =
      PodMadeBy("mpi", {"--master=launcher", "--worker=node", "--port=5000"}, job, 0, 0);
  // A fixed hostname is one host for all replicas.
  EXPECT_EQ(ContainerEnv(Container(launcher, "containers", 0), "MPI_HOST"), "n.net");
  EXPECT_EQ(Container(launcher, "containers", 0).at("ports").at(0).at("containerPort"), 5000);

  // Without a worker task the master is left as it is.
  json::object alone = PodMadeBy("mpi", {"--master=launcher", "--worker=none"}, job, 0, 0);
  EXPECT_EQ(Container(alone, "containers", 0).as_object().count("ports"), 0u);
  EXPECT_EQ(ContainerEnv(Container(alone, "containers", 0), "MPI_HOST"), "<absent>");

  PluginBuild bad = MakePlugin("mpi", {"--port=x"});
  ASSERT_NE(bad.plugin, nullptr);
  EXPECT_EQ(bad.problem,
            "plugin mpi flagset parse failed, err: invalid value \"x\" for flag -port: parse "
            "error");
}

}  // namespace
}  // namespace muster::controller

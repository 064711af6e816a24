#pragma once

// A kubelet emulator for device plugin tests: the kubelet's side of the v1beta1 device plugin API
// over real unix sockets. It serves Registration on <dir>/kubelet.sock; for each registration it
// dials <dir>/<endpoint>, asks GetDevicePluginOptions and keeps a ListAndWatch stream open,
// recording every list it receives; tests then call Allocate, GetPreferredAllocation and
// PreStartContainer as the kubelet would. Restart() does what a kubelet restart does to the
// folder: stop, delete every socket in it, serve kubelet.sock again.
//
// Thread-safety: every method may be called from any thread.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace muster::deviceplugin::testing {

class KubeletEmulator {
 public:
  struct Registration {
    v1beta1::RegisterRequest request;
    v1beta1::DevicePluginOptions options;  // from GetDevicePluginOptions
  };
  using DeviceList = std::vector<v1beta1::Device>;

  static absl::StatusOr<std::unique_ptr<KubeletEmulator>> Start(const std::string& dir);
  ~KubeletEmulator();
  KubeletEmulator(const KubeletEmulator&) = delete;
  KubeletEmulator& operator=(const KubeletEmulator&) = delete;

  // Stops serving and drops every plugin connection; removes kubelet.sock.
  void Stop();
  // A kubelet restart: Stop, delete every socket file in the folder, serve kubelet.sock again.
  // Registrations are kept (their count shows the re-registration).
  absl::Status Restart();

  const std::string& socket_path() const { return socket_path_; }

  // Every Register call so far, in order (rejected ones included).
  std::vector<Registration> Registrations() const;
  // Registered resource names, sorted.
  std::vector<std::string> Resources() const;

  // Waits until `resource` is registered and its stream has delivered a list for which
  // `accept` returns true (any list when absent); returns that list. DeadlineExceeded with the
  // last list seen otherwise.
  absl::StatusOr<DeviceList> WaitForDevices(
      const std::string& resource, std::function<bool(const DeviceList&)> accept = nullptr,
      std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Lists received for `resource` since it last registered.
  int ListUpdates(const std::string& resource) const;
  // Waits for `count` registrations in all.
  bool WaitForRegistrations(size_t count,
                            std::chrono::milliseconds timeout = std::chrono::seconds(20));

  absl::StatusOr<v1beta1::AllocateResponse> Allocate(
      const std::string& resource, const std::vector<std::vector<std::string>>& containers);
  absl::StatusOr<std::vector<std::string>> PreferredAllocation(
      const std::string& resource, const std::vector<std::string>& available,
      const std::vector<std::string>& must_include, int size);
  absl::Status PreStartContainer(const std::string& resource,
                                 const std::vector<std::string>& ids);

 private:
  class RegistrationService;
  struct Endpoint;

  explicit KubeletEmulator(std::string dir);
  absl::Status Serve();
  grpc::Status OnRegister(const v1beta1::RegisterRequest& request);
  void Connect(v1beta1::RegisterRequest request);
  absl::StatusOr<std::shared_ptr<Endpoint>> EndpointFor(const std::string& resource) const;

  const std::string dir_;
  const std::string socket_path_;
  std::unique_ptr<RegistrationService> service_;
  std::unique_ptr<grpc::Server> server_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Registration> registrations_;
  std::map<std::string, std::shared_ptr<Endpoint>> endpoints_;
  std::vector<std::thread> connectors_;
};

// "ID=Healthy" lines, for failure messages.
std::string Describe(const KubeletEmulator::DeviceList& devices);

}  // namespace muster::deviceplugin::testing

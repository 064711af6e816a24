#include "deviceplugin/testing/kubelet_emulator.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt/format.h"

namespace muster::deviceplugin::testing {

using namespace std::chrono_literals;

struct KubeletEmulator::Endpoint {
  std::string resource;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
  grpc::ClientContext stream_context;
  std::thread reader;
  DeviceList latest;   // guarded by the emulator's mu_
  int updates = 0;     // guarded by the emulator's mu_
  bool ended = false;  // guarded by the emulator's mu_
};

class KubeletEmulator::RegistrationService final : public v1beta1::Registration::Service {
 public:
  explicit RegistrationService(KubeletEmulator* emulator) : emulator_(emulator) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    return emulator_->OnRegister(*request);
  }

 private:
  KubeletEmulator* emulator_;
};

namespace {

absl::Status FromGrpc(const grpc::Status& status, std::string_view what) {
  std::string message = fmt::format("{}: {}", what, status.error_message());
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
      return absl::InvalidArgumentError(message);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return absl::FailedPreconditionError(message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::DeadlineExceededError(message);
    default:
      return absl::UnavailableError(message);
  }
}

}  // namespace

std::string Describe(const KubeletEmulator::DeviceList& devices) {
  std::string out;
  for (const auto& d : devices) out += fmt::format("{}={} ", d.id(), d.health());
  return out.empty() ? "(none)" : out;
}

KubeletEmulator::KubeletEmulator(std::string dir)
    : dir_(std::move(dir)), socket_path_(dir_ + "/kubelet.sock") {}

KubeletEmulator::~KubeletEmulator() { Stop(); }

absl::StatusOr<std::unique_ptr<KubeletEmulator>> KubeletEmulator::Start(const std::string& dir) {
  std::unique_ptr<KubeletEmulator> emulator(new KubeletEmulator(dir));
  if (auto s = emulator->Serve(); !s.ok()) return s;
  return emulator;
}

absl::Status KubeletEmulator::Serve() {
  unlink(socket_path_.c_str());
  service_ = std::make_unique<RegistrationService>(this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::UnavailableError(fmt::format("cannot serve {}", socket_path_));
  }
  return absl::OkStatus();
}

grpc::Status KubeletEmulator::OnRegister(const v1beta1::RegisterRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  registrations_.push_back({request, {}});
  cv_.notify_all();
  if (request.version() != "v1beta1") {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("Unsupported version \"{}\"", request.version()));
  }
  // The kubelet connects back from its own goroutine; so does the emulator.
  connectors_.emplace_back([this, request] { Connect(request); });
  return grpc::Status::OK;
}

void KubeletEmulator::Connect(v1beta1::RegisterRequest request) {
  auto endpoint = std::make_shared<Endpoint>();
  endpoint->resource = request.resource_name();
  endpoint->channel = grpc::CreateChannel("unix:" + dir_ + "/" + request.endpoint(),
                                          grpc::InsecureChannelCredentials());
  endpoint->stub = v1beta1::DevicePlugin::NewStub(endpoint->channel);
  v1beta1::DevicePluginOptions options;
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 5s);
    context.set_wait_for_ready(true);
    v1beta1::Empty empty;
    if (!endpoint->stub->GetDevicePluginOptions(&context, empty, &options).ok()) return;
  }
  std::shared_ptr<Endpoint> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = registrations_.rbegin(); it != registrations_.rend(); ++it) {
      if (it->request.resource_name() == request.resource_name()) {
        it->options = options;
        break;
      }
    }
    old = endpoints_[endpoint->resource];
    endpoints_[endpoint->resource] = endpoint;
    cv_.notify_all();
  }
  if (old != nullptr) {
    old->stream_context.TryCancel();
    if (old->reader.joinable()) old->reader.join();
  }
  Endpoint* e = endpoint.get();
  e->reader = std::thread([this, e] {
    v1beta1::Empty empty;
    auto reader = e->stub->ListAndWatch(&e->stream_context, empty);
    v1beta1::ListAndWatchResponse response;
    while (reader->Read(&response)) {
      std::lock_guard<std::mutex> lock(mu_);
      e->latest.assign(response.devices().begin(), response.devices().end());
      ++e->updates;
      cv_.notify_all();
    }
    reader->Finish();
    std::lock_guard<std::mutex> lock(mu_);
    e->ended = true;
    cv_.notify_all();
  });
}

void KubeletEmulator::Stop() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + 1s);
    server_->Wait();
    server_.reset();
  }
  std::vector<std::thread> connectors;
  {
    std::lock_guard<std::mutex> lock(mu_);
    connectors.swap(connectors_);
  }
  for (auto& t : connectors) t.join();
  std::map<std::string, std::shared_ptr<Endpoint>> endpoints;
  {
    std::lock_guard<std::mutex> lock(mu_);
    endpoints.swap(endpoints_);
  }
  for (auto& [name, endpoint] : endpoints) {
    endpoint->stream_context.TryCancel();
    if (endpoint->reader.joinable()) endpoint->reader.join();
  }
  unlink(socket_path_.c_str());
}

absl::Status KubeletEmulator::Restart() {
  Stop();
  DIR* dir = opendir(dir_.c_str());
  if (dir == nullptr) return absl::UnavailableError(fmt::format("cannot list {}", dir_));
  while (dirent* entry = readdir(dir)) {
    std::string path = dir_ + "/" + entry->d_name;
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path.c_str());
  }
  closedir(dir);
  return Serve();
}

std::vector<KubeletEmulator::Registration> KubeletEmulator::Registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registrations_;
}

std::vector<std::string> KubeletEmulator::Resources() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, endpoint] : endpoints_) names.push_back(name);
  return names;
}

absl::StatusOr<KubeletEmulator::DeviceList> KubeletEmulator::WaitForDevices(
    const std::string& resource, std::function<bool(const DeviceList&)> accept,
    std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  DeviceList last;
  bool ok = cv_.wait_for(lock, timeout, [&] {
    auto it = endpoints_.find(resource);
    if (it == endpoints_.end() || it->second->updates == 0) return false;
    last = it->second->latest;
    return !accept || accept(last);
  });
  if (!ok) {
    return absl::DeadlineExceededError(fmt::format(
        "no acceptable device list for {} within {} ms; last: {}", resource, timeout.count(),
        Describe(last)));
  }
  return last;
}

int KubeletEmulator::ListUpdates(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = endpoints_.find(resource);
  return it == endpoints_.end() ? 0 : it->second->updates;
}

bool KubeletEmulator::WaitForRegistrations(size_t count, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return registrations_.size() >= count; });
}

absl::StatusOr<std::shared_ptr<KubeletEmulator::Endpoint>> KubeletEmulator::EndpointFor(
    const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = endpoints_.find(resource);
  if (it == endpoints_.end()) {
    return absl::NotFoundError(fmt::format("{} is not registered", resource));
  }
  return it->second;
}

absl::StatusOr<v1beta1::AllocateResponse> KubeletEmulator::Allocate(
    const std::string& resource, const std::vector<std::vector<std::string>>& containers) {
  auto endpoint = EndpointFor(resource);
  if (!endpoint.ok()) return endpoint.status();
  v1beta1::AllocateRequest request;
  for (const auto& ids : containers) {
    auto* container = request.add_container_requests();
    for (const auto& id : ids) container->add_devices_ids(id);
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  v1beta1::AllocateResponse response;
  grpc::Status status = (*endpoint)->stub->Allocate(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, "Allocate");
  return response;
}

absl::StatusOr<std::vector<std::string>> KubeletEmulator::PreferredAllocation(
    const std::string& resource, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  auto endpoint = EndpointFor(resource);
  if (!endpoint.ok()) return endpoint.status();
  v1beta1::PreferredAllocationRequest request;
  auto* container = request.add_container_requests();
  for (const auto& id : available) container->add_available_deviceids(id);
  for (const auto& id : must_include) container->add_must_include_deviceids(id);
  container->set_allocation_size(size);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  v1beta1::PreferredAllocationResponse response;
  grpc::Status status = (*endpoint)->stub->GetPreferredAllocation(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, "GetPreferredAllocation");
  if (response.container_responses_size() != 1) {
    return absl::InternalError("GetPreferredAllocation answered for a different container count");
  }
  const auto& ids = response.container_responses(0).deviceids();
  return std::vector<std::string>(ids.begin(), ids.end());
}

absl::Status KubeletEmulator::PreStartContainer(const std::string& resource,
                                                const std::vector<std::string>& ids) {
  auto endpoint = EndpointFor(resource);
  if (!endpoint.ok()) return endpoint.status();
  v1beta1::PreStartContainerRequest request;
  for (const auto& id : ids) request.add_devices_ids(id);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  v1beta1::PreStartContainerResponse response;
  grpc::Status status = (*endpoint)->stub->PreStartContainer(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, "PreStartContainer");
  return absl::OkStatus();
}

}  // namespace muster::deviceplugin::testing

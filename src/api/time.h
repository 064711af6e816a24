#pragma once

// Kubernetes' timestamps (metav1.Time, metav1.MicroTime): RFC 3339 text, written in UTC.
//
// The one parser and formatter of every layer: creation and deletion timestamps and `kubectl
// get`'s AGE column in the API server, TTLs in the job controller, container times and lease
// renewals in the node agent, condition times in the scheduler, the SLA plugin's waiting time and
// the simulator's virtual clock. They used to be written out in each of those places, with small
// differences in what each accepted (see ParseTime).
//
// Thread-safety: every function is pure.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace muster::api {

// "2024-05-01T12:00:00Z": UTC with whole seconds, as kube writes metav1.Time; a fraction of a
// second is dropped (rounding toward the past).
std::string FormatTime(std::chrono::system_clock::time_point t);
// The same for seconds since the Unix epoch.
std::string FormatUnixTime(int64_t unix_seconds);
// "2024-05-01T12:00:00.123456Z": UTC with microseconds, as kube writes metav1.MicroTime (a
// Lease's renewTime); finer fractions are dropped.
std::string FormatMicroTime(std::chrono::system_clock::time_point t);

// Reads an RFC 3339 date-time: "2024-05-01T12:00:00Z", with an optional fraction of any length
// ("2024-05-01T12:00:00.123456Z") and a "Z" or a numeric offset ("2024-05-01T14:00:00+02:00");
// 't' and 'z' may be lower case. Every field has its full width of digits. nullopt when the text
// is anything else: a missing zone, a space for the 'T', a '.' without digits, trailing text, or
// a field out of range (month 13, day 32, hour 24, minute 60, second 61). A day past the end of
// its month counts on into the next (February 30 reads as March 1 or 2), and a leap second :60
// as the next minute's :00. Digits finer than a nanosecond are ignored. A time that
// system_clock cannot hold (before 1678 or after 2261 with this library) is nullopt here too.
std::optional<std::chrono::system_clock::time_point> ParseTime(std::string_view text);
// The same as whole seconds since the Unix epoch; a fraction is dropped (rounding toward the
// past).
std::optional<int64_t> ParseUnixTime(std::string_view text);

// A query parameter of type metav1.Time as kube-apiserver decodes it (Time.UnmarshalQueryParameter:
// Go's time.Parse with time.RFC3339): whole seconds since the Unix epoch, a fraction dropped.
// Go's layout walk is followed, so that a refusal is Go's message, for kube answers 400 with it:
// `parsing time "abc" as "2006-01-02T15:04:05Z07:00": cannot parse "abc" as "2006"`, `parsing
// time "2024-13-01T00:00:00Z": month out of range`, `... extra text: "x"`. As Go, it takes a
// one-digit hour and a fraction of any length, and not a lower-case 't' or 'z'.
absl::StatusOr<int64_t> ParseGoRfc3339(std::string_view text);

// "2024-05-01T12:00:00.000000001Z": nanoseconds since the epoch as kubelet writes a log line's
// timestamp (RFC3339NanoFixed, always nine digits).
std::string FormatNanoTimeFixed(int64_t unix_nanos);

}  // namespace muster::api

#include "replication/registration_event.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

TEST(RegistrationEventTest, RegistrationRoundTripsEveryField) {
  RegistrationEvent event;
  event.kind = RegistrationEventKind::kRegister;
  event.content = std::string("a document\0with a NUL byte", 26);
  event.format = 3;
  event.metadata.title = "Title";
  event.metadata.author = "Author";
  event.metadata.owner = "alice";
  event.metadata.collection = "theses";
  event.metadata.external_id = "ext-1";
  event.metadata.registered_unix_micros = 1732500000123456;
  ASSERT_OK_AND_ASSIGN(RegistrationEvent decoded,
                       DecodeRegistrationEvent(EncodeRegistrationEvent(event)));
  EXPECT_EQ(decoded.kind, RegistrationEventKind::kRegister);
  EXPECT_EQ(decoded.content, event.content);
  EXPECT_EQ(decoded.format, 3u);
  EXPECT_EQ(decoded.metadata.title, "Title");
  EXPECT_EQ(decoded.metadata.author, "Author");
  EXPECT_EQ(decoded.metadata.owner, "alice");
  EXPECT_EQ(decoded.metadata.collection, "theses");
  EXPECT_EQ(decoded.metadata.external_id, "ext-1");
  EXPECT_EQ(decoded.metadata.registered_unix_micros, 1732500000123456);
}

TEST(RegistrationEventTest, ExpiryAndEmbargoTravelOnlyWhenSet) {
  RegistrationEvent event;
  event.content = "text";
  event.metadata.registered_unix_micros = 1732500000123456;
  const std::string without = EncodeRegistrationEvent(event);
  ASSERT_OK_AND_ASSIGN(RegistrationEvent plain, DecodeRegistrationEvent(without));
  EXPECT_EQ(plain.metadata.expires_unix_micros, 0);
  EXPECT_EQ(plain.metadata.not_before_unix_micros, 0);
  // The first revision's bytes end with the content.
  EXPECT_EQ(without.substr(without.size() - 5), std::string("\x04text"));

  event.metadata.expires_unix_micros = 1800000000000000;
  event.metadata.not_before_unix_micros = 1750000000000000;
  const std::string with = EncodeRegistrationEvent(event);
  ASSERT_OK_AND_ASSIGN(RegistrationEvent decoded, DecodeRegistrationEvent(with));
  EXPECT_EQ(decoded.metadata.expires_unix_micros, 1800000000000000);
  EXPECT_EQ(decoded.metadata.not_before_unix_micros, 1750000000000000);
  EXPECT_EQ(decoded.content, "text");
  // Cut inside the lifetime: damage, not a missing field.
  EXPECT_TRUE(absl::IsDataLoss(DecodeRegistrationEvent(with.substr(0, with.size() - 1)).status()));
}

TEST(RegistrationEventTest, UnregistrationRoundTrips) {
  RegistrationEvent event;
  event.kind = RegistrationEventKind::kUnregister;
  event.doc_id = 1234567;
  ASSERT_OK_AND_ASSIGN(RegistrationEvent decoded,
                       DecodeRegistrationEvent(EncodeRegistrationEvent(event)));
  EXPECT_EQ(decoded.kind, RegistrationEventKind::kUnregister);
  EXPECT_EQ(decoded.doc_id, 1234567u);
}

// DATA_LOSS: bytes no node can apply (the applier sets them aside). An unknown tag is a later
// revision's event instead, which a newer build applies: UNIMPLEMENTED (retried).
TEST(RegistrationEventTest, MalformedEventsAreDataLoss) {
  RegistrationEvent event;
  event.content = "text";
  const std::string good = EncodeRegistrationEvent(event);
  EXPECT_TRUE(absl::IsDataLoss(DecodeRegistrationEvent("").status()));
  EXPECT_TRUE(absl::IsDataLoss(DecodeRegistrationEvent(good.substr(0, good.size() - 1)).status()));
  EXPECT_TRUE(absl::IsDataLoss(DecodeRegistrationEvent(good + "x").status()));
  std::string unknown_tag = good;
  unknown_tag[0] = 9;
  EXPECT_TRUE(absl::IsUnimplemented(DecodeRegistrationEvent(unknown_tag).status()));
  std::string unknown_kind = good;
  unknown_kind[1] = 7;
  EXPECT_TRUE(absl::IsDataLoss(DecodeRegistrationEvent(unknown_kind).status()));
}

}  // namespace
}  // namespace cops

#include "server/auth/token_table.hpp"

#include <gtest/gtest.h>

namespace svdserve {
namespace {

TokenEntry entry(std::string_view token, Role role, std::string name, std::string id_prefix = {}) {
  return {.digest = digest_of(token), .role = role, .name = std::move(name),
          .id_prefix = std::move(id_prefix)};
}

TEST(TokenTable, FindsEachTokenByItsHash) {
  const TokenTable table({entry("tok-read", Role::read, "reader"),
                          entry("tok-write", Role::write, "writer", "tenant-a/"),
                          entry("tok-admin", Role::admin, "ops")});
  ASSERT_EQ(table.size(), 3U);
  const TokenEntry* reader = table.find(digest_of("tok-read"));
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->name, "reader");
  EXPECT_EQ(reader->role, Role::read);
  const TokenEntry* writer = table.find(digest_of("tok-write"));
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(writer->name, "writer");
  EXPECT_EQ(writer->id_prefix, "tenant-a/");
  const TokenEntry* admin = table.find(digest_of("tok-admin"));
  ASSERT_NE(admin, nullptr);
  EXPECT_EQ(admin->role, Role::admin);
}

TEST(TokenTable, AWrongTokenFindsNothing) {
  const TokenTable table({entry("tok-read", Role::read, "reader")});
  EXPECT_EQ(table.find(digest_of("tok-rea")), nullptr);
  EXPECT_EQ(table.find(digest_of("tok-read ")), nullptr);
  EXPECT_EQ(table.find(digest_of("TOK-READ")), nullptr);
  EXPECT_EQ(table.find(digest_of("")), nullptr);
  // The hash the file holds is not a token: presenting it finds nothing.
  EXPECT_EQ(table.find(digest_of(hex_of(digest_of("tok-read")))), nullptr);
  EXPECT_EQ(TokenTable({}).find(digest_of("tok-read")), nullptr);
}

TEST(Role, EachAllowsWhatTheOneBeforeAllows) {
  EXPECT_TRUE(allows(Role::read, Role::read));
  EXPECT_FALSE(allows(Role::read, Role::write));
  EXPECT_FALSE(allows(Role::read, Role::admin));
  EXPECT_TRUE(allows(Role::write, Role::read));
  EXPECT_TRUE(allows(Role::write, Role::write));
  EXPECT_FALSE(allows(Role::write, Role::admin));
  EXPECT_TRUE(allows(Role::admin, Role::read));
  EXPECT_TRUE(allows(Role::admin, Role::write));
  EXPECT_TRUE(allows(Role::admin, Role::admin));
  for (Role role : {Role::read, Role::write, Role::admin}) {
    EXPECT_EQ(parse_role(role_name(role)), role);
  }
  EXPECT_FALSE(parse_role("root").has_value());
}

}  // namespace
}  // namespace svdserve

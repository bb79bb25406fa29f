// SPDX-License-Identifier: MIT
// OutputFile / replace_file (core/file.hpp) and escape_user_text (core/text.hpp).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/file.hpp"
#include "core/text.hpp"

namespace fs = std::filesystem;
using txpath::FileError;

namespace {

struct TempDir {
  fs::path dir;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "txpath-file-XXXXXX").string();
    dir = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(dir); }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int entries(const fs::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST(OutputFile, ReplacesKeepingModeAndLeavesNoTemporary) {
  TempDir t;
  const fs::path p = t.dir / "out.json";
  { std::ofstream(p) << "old"; }
  ASSERT_EQ(::chmod(p.c_str(), 0640), 0);
  txpath::replace_file(p.string(), "new contents", "--json");
  EXPECT_EQ(slurp(p), "new contents");
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(entries(t.dir), 1);
}

TEST(OutputFile, UncommittedLeavesTheOldFileIntact) {
  TempDir t;
  const fs::path p = t.dir / "cfg";
  { std::ofstream(p) << "line 1\nline 2\n"; }
  {
    txpath::OutputFile out(p.string(), "configuration");
    out.write("half a li");
    // destroyed without commit: a failure between the first write and the rename
  }
  EXPECT_EQ(slurp(p), "line 1\nline 2\n");
  EXPECT_EQ(entries(t.dir), 1);
}

TEST(OutputFile, FullDeviceFailsNamingTheFile) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  try {
    txpath::replace_file("/dev/full", std::string(1 << 16, 'x'), "--csv");
    FAIL() << "a write to /dev/full succeeded";
  } catch (const FileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--csv \"/dev/full\""), std::string::npos) << what;
    EXPECT_NE(what.find("No space left"), std::string::npos) << what;
  }
}

TEST(OutputFile, OwnSymlinkIsFollowedAndItsTargetReplaced) {
  TempDir t;
  const fs::path target = t.dir / "real.csv";
  const fs::path link = t.dir / "link.csv";
  { std::ofstream(target) << "old"; }
  fs::create_symlink(target, link);
  txpath::replace_file(link.string(), "new", "--csv");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "new");
}

TEST(OutputFile, ForeignSymlinkInStickyDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to plant another user's symlink";
  TempDir t;
  const fs::path sticky = t.dir / "tmp";
  fs::create_directory(sticky);
  ASSERT_EQ(::chmod(sticky.c_str(), 01777), 0);
  const fs::path victim = t.dir / "root-only";
  { std::ofstream(victim) << "secret"; }
  const fs::path link = sticky / "out.json";
  fs::create_symlink(victim, link);
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);  // nobody's link
  EXPECT_THROW(txpath::replace_file(link.string(), "overwritten", "--json"), FileError);
  EXPECT_EQ(slurp(victim), "secret");
  EXPECT_THROW(txpath::refuse_foreign_symlink(link.string(), "configuration"), FileError);
}

TEST(OutputFile, DirectoryIsRefused) {
  TempDir t;
  EXPECT_THROW(txpath::replace_file(t.dir.string(), "x", "--plot"), FileError);
}

TEST(EscapeUserText, OneLineNoEscapeNoOverlongEcho) {
  EXPECT_EQ(txpath::escape_user_text("a\nb\x1b[2J"), "a\\x0ab\\x1b[2J");
  EXPECT_EQ(txpath::escape_user_text("q\"\\"), "q\\\"\\\\");
  EXPECT_EQ(txpath::escape_user_text("\xff"), "\\xff");             // not UTF-8
  EXPECT_EQ(txpath::escape_user_text("\xc2\x9b"), "\\xc2\\x9b");    // C1 CSI
  EXPECT_EQ(txpath::escape_user_text("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 stays
  const std::string huge(128 * 1024, 'A');
  const std::string shown = txpath::escape_user_text(huge);
  EXPECT_EQ(shown, std::string(txpath::kMaxQuotedText, 'A') + "...");
}

// Tests of the m5-op library: the bytes of every magic instruction (read back from the
// built archive with objdump), the backend choice, and the shared-folder stand-ins.
#include "m5ops.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string run(const std::string& command, int* status = nullptr) {
    std::string output;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return output;
    std::array<char, 4096> buffer{};
    size_t got = 0;
    while ((got = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), got);
    int raw = pclose(pipe);
    if (status != nullptr) *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return output;
}

// Function name -> its machine code, from `objdump -d` of the library archive.
std::map<std::string, std::vector<unsigned>> disassembled_functions() {
    std::map<std::string, std::vector<unsigned>> functions;
    std::istringstream lines(run(std::string(OBJDUMP) + " -d " + M5OPS_ARCHIVE));
    std::string line;
    std::vector<unsigned>* current = nullptr;
    while (std::getline(lines, line)) {
        auto open = line.find(" <");
        if (open != std::string::npos && line.ends_with(">:")) {
            current = &functions[line.substr(open + 2, line.size() - open - 4)];
            continue;
        }
        // Instruction lines: "  addr:\tb1 b2 ...\tmnemonic" (continuations lack the mnemonic).
        auto first_tab = line.find('\t');
        if (current == nullptr || first_tab == std::string::npos) continue;
        auto second_tab = line.find('\t', first_tab + 1);
        std::istringstream bytes(line.substr(first_tab + 1, second_tab - first_tab - 1));
        std::string byte;
        while (bytes >> byte) current->push_back(std::stoul(byte, nullptr, 16));
    }
    return functions;
}

size_t count_magic(const std::vector<unsigned>& code, unsigned function_code) {
    size_t found = 0;
    for (size_t i = 0; i + 3 < code.size(); ++i)
        if (code[i] == 0x0f && code[i + 1] == 0x04 && code[i + 2] == (function_code & 0xff) &&
            code[i + 3] == (function_code >> 8))
            ++found;
    return found;
}

size_t count_any_magic(const std::vector<unsigned>& code) {
    size_t found = 0;
    for (size_t i = 0; i + 1 < code.size(); ++i)
        if (code[i] == 0x0f && code[i + 1] == 0x04) ++found;
    return found;
}

}  // namespace

// The specification (ARCHITECTURE.md section 4), written out here rather than taken from
// the header, so a wrong code in the library fails this test.
TEST(M5OpEncoding, EveryOpHasItsSpecifiedBytes) {
    const std::map<std::string, unsigned> specified = {
        {"m5op_exit", 0x21},          {"m5op_fail", 0x22},       {"m5op_reset_stats", 0x40},
        {"m5op_dump_stats", 0x41},    {"m5op_dump_reset_stats", 0x42},
        {"m5op_checkpoint", 0x43},    {"m5op_write_file", 0x4F}, {"m5op_read_file", 0x50},
        {"m5op_work_begin", 0x5a},    {"m5op_work_end", 0x5b},     {"m5op_switch_cpu", 0x52},
    };
    auto functions = disassembled_functions();
    ASSERT_FALSE(functions.empty()) << "objdump found no functions in " << M5OPS_ARCHIVE;
    for (const auto& [name, code] : specified) {
        ASSERT_TRUE(functions.contains(name)) << name << " missing from the archive";
        EXPECT_EQ(count_magic(functions[name], code), 1u)
            << name << " must hold 0f 04 " << std::hex << (code & 0xff) << " " << (code >> 8);
        EXPECT_EQ(count_any_magic(functions[name]), 1u) << name << " holds another m5 op";
    }
}

TEST(M5OpEncoding, ArgumentsStayInTheRegistersTheSpecificationNames) {
    // The System V ABI passes the first four arguments in rdi, rsi, rdx, rcx and returns
    // rax: exactly the m5-op registers.  So each op function must be the instruction and
    // a return, with nothing moving a register in between (endbr64 may come first).
    auto functions = disassembled_functions();
    for (const char* name : {"m5op_exit", "m5op_fail", "m5op_reset_stats", "m5op_dump_stats",
                             "m5op_dump_reset_stats", "m5op_checkpoint", "m5op_write_file",
                             "m5op_read_file", "m5op_work_begin", "m5op_work_end"}) {
        auto code = functions[name];
        size_t start = 0;
        if (code.size() >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e &&
            code[3] == 0xfa)
            start = 4;  // endbr64
        ASSERT_GE(code.size(), start + 5) << name;
        EXPECT_EQ(code[start], 0x0fu) << name;
        EXPECT_EQ(code[start + 1], 0x04u) << name;
        EXPECT_EQ(code[start + 4], 0xc3u) << name << ": something runs between the op and ret";
    }
}

TEST(M5Backend, ReadFromTheKernelCommandLine) {
    EXPECT_EQ(m5_backend_from_cmdline("console=ttyS0 pimcloud.backend=gem5 quiet"), M5_BACKEND_GEM5);
    EXPECT_EQ(m5_backend_from_cmdline("pimcloud.backend=qemu\n"), M5_BACKEND_QEMU);
    EXPECT_EQ(m5_backend_from_cmdline("console=ttyS0"), M5_BACKEND_NATIVE);
    EXPECT_EQ(m5_backend_from_cmdline("pimcloud.backend=gem55"), M5_BACKEND_NATIVE);
    EXPECT_EQ(m5_backend_from_cmdline("xpimcloud.backend=gem5"), M5_BACKEND_NATIVE);
    EXPECT_EQ(m5_backend_from_cmdline("pimcloud.backend=gem5 pimcloud.backend=qemu"),
              M5_BACKEND_QEMU);
    EXPECT_STREQ(m5_backend_name(M5_BACKEND_GEM5), "gem5");
}

class SharedFolder : public ::testing::Test {
protected:
    void SetUp() override {
        share = fs::temp_directory_path() /
                ("m5ops_test_" + std::to_string(::getpid()) + "_" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(share);
        fs::create_directories(share);
        setenv("PIMCLOUD_M5_SHARE", share.c_str(), 1);
        setenv("PIMCLOUD_BACKEND", "native", 1);
        m5_backend_reset();
    }
    void TearDown() override {
        fs::remove_all(share);
        unsetenv("PIMCLOUD_M5_SHARE");
        unsetenv("PIMCLOUD_BACKEND");
        m5_backend_reset();
    }
    static std::string slurp(const fs::path& path) {
        std::ifstream in(path, std::ios::binary);
        return {std::istreambuf_iterator<char>(in), {}};
    }
    fs::path share;
};

TEST_F(SharedFolder, EnvironmentForcesTheBackend) {
    EXPECT_EQ(m5_backend(), M5_BACKEND_NATIVE);
    setenv("PIMCLOUD_BACKEND", "qemu", 1);
    m5_backend_reset();
    EXPECT_EQ(m5_backend(), M5_BACKEND_QEMU);
}

TEST_F(SharedFolder, ReadFileReadsTheHostFileByOffset) {
    std::ofstream(share / "readfile") << "echo scenario";
    char buffer[8] = {};
    EXPECT_EQ(m5_read_file(buffer, 4, 0), 4);
    EXPECT_EQ(std::string(buffer, 4), "echo");
    EXPECT_EQ(m5_read_file(buffer, sizeof buffer, 5), 8);
    EXPECT_EQ(std::string(buffer, 8), "scenario");
    EXPECT_EQ(m5_read_file(buffer, sizeof buffer, 13), 0);
}

TEST_F(SharedFolder, ReadFileWithoutAHostFileIsAnError) {
    char buffer[4];
    EXPECT_EQ(m5_read_file(buffer, sizeof buffer, 0), -ENOENT);
}

TEST_F(SharedFolder, WriteFileCreatesFoldersAndHonoursOffsets) {
    EXPECT_EQ(m5_write_file("hello", 5, 0, "results/a/b.txt"), 5);
    EXPECT_EQ(m5_write_file("XY", 2, 5, "results/a/b.txt"), 2);
    EXPECT_EQ(slurp(share / "out/results/a/b.txt"), "helloXY");
    // Offset 0 truncates, as gem5's writefile does.
    EXPECT_EQ(m5_write_file("new", 3, 0, "results/a/b.txt"), 3);
    EXPECT_EQ(slurp(share / "out/results/a/b.txt"), "new");
}

TEST_F(SharedFolder, WriteFileRefusesNamesOutsideTheOutputFolder) {
    for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "./a"})
        EXPECT_EQ(m5_write_file("x", 1, 0, bad), -EINVAL) << bad;
    EXPECT_FALSE(fs::exists(share / "x"));
}

TEST_F(SharedFolder, StatsAndExitAreHarmlessOnANativeMachine) {
    EXPECT_EQ(m5_dump_reset_stats(0, 0), 0);
    EXPECT_EQ(m5_checkpoint(0, 0), 0);
    EXPECT_EQ(m5_work_begin(1, 2), 0);
    EXPECT_EQ(m5_switch_cpu(0, 0), 0);
    EXPECT_EQ(m5_exit(0), 0);  // returns: a native machine is never powered off
}

TEST_F(SharedFolder, CommandCopiesFilesBothWays) {
    std::string m5 = M5_COMMAND;
    std::ofstream(share / "payload") << "line one\nline two\n";
    int status = -1;
    run(m5 + " writefile " + (share / "payload").string() + " results/copy.txt", &status);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(slurp(share / "out/results/copy.txt"), "line one\nline two\n");
    fs::copy_file(share / "payload", share / "readfile");
    EXPECT_EQ(run(m5 + " readfile", &status), "line one\nline two\n");
    EXPECT_EQ(status, 0);
    run(m5 + " readfile " + (share / "got").string(), &status);
    EXPECT_EQ(slurp(share / "got"), "line one\nline two\n");
    EXPECT_EQ(run(m5 + " backend"), "native\n");
    run(m5 + " writefile " + (share / "payload").string() + " ../escape 2>/dev/null", &status);
    EXPECT_EQ(status, 1);
    run(m5 + " nonsense 2>/dev/null", &status);
    EXPECT_EQ(status, 2);
}

TEST_F(SharedFolder, CommandWritesEmptyFiles) {
    std::ofstream(share / "empty");
    int status = -1;
    run(std::string(M5_COMMAND) + " writefile " + (share / "empty").string(), &status);
    EXPECT_EQ(status, 0);
    EXPECT_TRUE(fs::exists(share / "out/empty"));
    EXPECT_EQ(fs::file_size(share / "out/empty"), 0u);
}

TEST(M5Command, IsStaticallyLinked) {
    // No program interpreter: it runs in an initramfs without a dynamic loader.
    auto headers = run("readelf -l " + std::string(M5_COMMAND));
    ASSERT_NE(headers.find("LOAD"), std::string::npos) << headers;
    EXPECT_EQ(headers.find("INTERP"), std::string::npos) << headers;
}

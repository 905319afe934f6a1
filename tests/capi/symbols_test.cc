// Checks libc10d's dynamic symbol table, read straight from the ELF file (no nm, no linking):
//   - SONAME is libc10d.so.<C10D_ABI_VERSION>;
//   - every exported definition is a C ABI function (c10d_*) or a c10d:: C++ entity (its
//     demangled name starts with "c10d::", or it is the typeinfo, typeinfo name, vtable, VTT or
//     guard variable of one); nothing of std::, gloo::, boost or any other namespace;
//   - nothing of the verbs engine's internals (c10d::verbs::) is exported but its API,
//     ProcessGroupVerbs (cmake/c10d_exports.map);
//   - the exported c10d_* functions are exactly the ones c10d/c_api.h declares;
//   - no exported data is mutable (the library links with -Bsymbolic: an executable that
//     copy-relocated a mutable variable would get a copy of its own), vtables and typeinfo aside;
//   - no dynamic relocation refers to a symbol the library defines: every reference of the
//     library to itself was bound at link time, so no other library (libtorch and its c10d::
//     classes) can interpose.
// Usage: capi_symbols_test LIBRARY C_API_HEADER
#include <cxxabi.h>
#include <elf.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> g_failures;

void failure(const std::string& what) {
  g_failures.push_back(what);
}

std::string readFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "symbols test: cannot read %s\n", path);
    std::exit(2);
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string();
}

bool startsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// "vtable for c10d::X" -> "vtable for " (the special-symbol prefix), else "".
std::string specialPrefix(const std::string& demangled) {
  for (const char* p :
       {"typeinfo for ", "typeinfo name for ", "vtable for ", "VTT for ", "guard variable for "}) {
    if (startsWith(demangled, p)) return p;
  }
  return "";
}

// c10d::verbs is internal but for its process group class.
constexpr const char* kVerbsApi = "c10d::verbs::ProcessGroupVerbs";

bool isHiddenInternal(const std::string& entity) {
  if (!startsWith(entity, "c10d::verbs::")) return false;
  const std::string api = kVerbsApi;
  if (!startsWith(entity, api)) return true;
  const char next = entity.size() > api.size() ? entity[api.size()] : '\0';
  return !(next == '\0' || next == ':' || next == '(');
}

// The functions c10d/c_api.h declares: after each "C10D_CAPI", the identifier just before the
// first '(' (a declaration's name), when no ';' comes first and it starts with "c10d_".
std::set<std::string> declaredFunctions(const std::string& header) {
  std::set<std::string> out;
  const std::string marker = "C10D_CAPI";
  auto isIdent = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t pos = header.find(marker); pos != std::string::npos;
       pos = header.find(marker, pos + marker.size())) {
    const size_t paren = header.find_first_of("(;", pos + marker.size());
    if (paren == std::string::npos || header[paren] != '(') continue;
    size_t end = paren;
    while (end > pos && std::isspace(static_cast<unsigned char>(header[end - 1]))) --end;
    size_t begin = end;
    while (begin > pos && isIdent(header[begin - 1])) --begin;
    const std::string name = header.substr(begin, end - begin);
    if (startsWith(name, "c10d_")) out.insert(name);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s LIBRARY C_API_HEADER\n", argv[0]);
    return 2;
  }
  const std::string image = readFile(argv[1]);
  const std::set<std::string> declared = declaredFunctions(readFile(argv[2]));
  const char* base = image.data();
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  if (image.size() < sizeof(Elf64_Ehdr) || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64) {
    std::fprintf(stderr, "symbols test: %s is not a 64-bit ELF file\n", argv[1]);
    return 2;
  }
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
  const char* shstr = base + sh[eh->e_shstrndx].sh_offset;
  auto sectionName = [&](size_t i) { return std::string(shstr + sh[i].sh_name); };

  const Elf64_Shdr* dynsym = nullptr;
  const Elf64_Shdr* dynamic = nullptr;
  std::vector<const Elf64_Shdr*> relas;
  for (size_t i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type == SHT_DYNSYM) dynsym = &sh[i];
    if (sh[i].sh_type == SHT_DYNAMIC) dynamic = &sh[i];
    if (sh[i].sh_type == SHT_RELA) relas.push_back(&sh[i]);
  }
  if (dynsym == nullptr || dynamic == nullptr) {
    std::fprintf(stderr, "symbols test: no .dynsym or .dynamic in %s\n", argv[1]);
    return 2;
  }
  const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + dynsym->sh_offset);
  const size_t nsyms = dynsym->sh_size / sizeof(Elf64_Sym);
  const char* dynstr = base + sh[dynsym->sh_link].sh_offset;

  // SONAME.
  std::string soname;
  const auto* dyn = reinterpret_cast<const Elf64_Dyn*>(base + dynamic->sh_offset);
  for (size_t i = 0; i < dynamic->sh_size / sizeof(Elf64_Dyn) && dyn[i].d_tag != DT_NULL; ++i) {
    if (dyn[i].d_tag == DT_SONAME) soname = dynstr + dyn[i].d_un.d_val;
  }
  if (soname != C10D_SONAME) failure("SONAME is '" + soname + "', expected '" C10D_SONAME "'");

  // Exported definitions.
  std::set<std::string> exportedC;
  size_t cxx = 0, specials = 0;
  std::vector<bool> defined(nsyms, false);
  for (size_t i = 1; i < nsyms; ++i) {
    const Elf64_Sym& s = syms[i];
    const std::string name = dynstr + s.st_name;
    if (s.st_shndx == SHN_UNDEF) continue;
    defined[i] = true;
    const int bind = ELF64_ST_BIND(s.st_info);
    const int type = ELF64_ST_TYPE(s.st_info);
    if (bind == STB_LOCAL) continue;
    if (startsWith(name, "c10d_")) {
      if (type != STT_FUNC) failure("'" + name + "' is exported but is not a function");
      exportedC.insert(name);
      continue;
    }
    const std::string d = demangle(name);
    const std::string special = specialPrefix(d);
    const std::string entity = d.substr(special.size());
    if (d.empty() || !startsWith(entity, "c10d::")) {
      failure("'" + name + "' (" + (d.empty() ? "not a C++ name" : d) +
              ") is exported but is neither c10d_* nor c10d::");
      continue;
    }
    if (isHiddenInternal(entity)) {
      failure("'" + d + "' is exported but is an internal of the verbs engine (only " + kVerbsApi +
              " of c10d::verbs is API; see cmake/c10d_exports.map)");
    }
    ++(special.empty() ? cxx : specials);
    // Data: read-only after relocation, vtables and typeinfo aside (see the header comment).
    const bool data = type == STT_OBJECT || type == STT_TLS || bind == STB_GNU_UNIQUE;
    const bool rtti = special == "typeinfo for " || special == "typeinfo name for " ||
                      special == "vtable for " || special == "VTT for ";
    if (data && !rtti && s.st_shndx < eh->e_shnum) {
      const std::string section = sectionName(s.st_shndx);
      if (section != ".rodata" && !startsWith(section, ".data.rel.ro")) {
        failure("'" + d + "' is exported mutable data (in " + section +
                "): with -Bsymbolic an executable that copy-relocates it would not share it with "
                "the library; hide it or reach it through a function");
      }
    }
    if (bind == STB_GNU_UNIQUE) {
      failure("'" + d +
              "' is a GNU unique symbol: the dynamic linker shares it with any other "
              "library defining it (build with -fno-gnu-unique)");
    }
  }

  // The C functions exported are the ones the header declares.
  for (const auto& f : declared) {
    if (!exportedC.count(f))
      failure("c_api.h declares " + f + " but the library does not export it");
  }
  for (const auto& f : exportedC) {
    if (!declared.count(f))
      failure("the library exports " + f + ", which c_api.h does not declare");
  }

  // No run-time relocation against the library's own definitions.
  size_t selfRelocs = 0;
  for (const Elf64_Shdr* r : relas) {
    if (r->sh_link >= eh->e_shnum || &sh[r->sh_link] != dynsym) continue;
    const auto* rel = reinterpret_cast<const Elf64_Rela*>(base + r->sh_offset);
    for (size_t i = 0; i < r->sh_size / sizeof(Elf64_Rela); ++i) {
      const size_t si = ELF64_R_SYM(rel[i].r_info);
      if (si == 0 || si >= nsyms || !defined[si]) continue;
      if (ELF64_ST_TYPE(syms[si].st_info) == STT_TLS) continue;  // TLS offsets: not interposable
      ++selfRelocs;
      const std::string name = dynstr + syms[si].st_name;
      const std::string d = demangle(name);
      if (selfRelocs <= 20) {
        failure("a dynamic relocation in " + sectionName(static_cast<size_t>(r - sh)) +
                " refers to the library's own '" + (d.empty() ? name : d) +
                "': resolved at run time, another library could interpose it");
      }
    }
  }

  std::printf(
      "%s: SONAME %s; exports %zu C ABI functions, %zu c10d:: C++ symbols, %zu c10d:: "
      "typeinfo/vtable/VTT/guard symbols; %zu relocations against its own symbols\n",
      argv[1], soname.c_str(), exportedC.size(), cxx, specials, selfRelocs);
  if (declared.size() < 50)
    failure("parsed only " + std::to_string(declared.size()) +
            " declarations from c_api.h: the header parser is broken");
  if (g_failures.empty()) {
    std::printf("symbols test: OK\n");
    return 0;
  }
  for (size_t i = 0; i < g_failures.size() && i < 50; ++i) {
    std::fprintf(stderr, "FAIL: %s\n", g_failures[i].c_str());
  }
  std::fprintf(stderr, "symbols test: %zu problem(s)\n", g_failures.size());
  return 1;
}

"""TE's C++ fused-attention query run directly: a standalone program, the oracle of the harness.

The harness calls TE's compiled query in process, through `ctypes`, with the arguments the
selector passes converted as pybind11 would, on the virtual device's machine. The oracle is
another program built from the same release's sources: TE's translation unit with a `main()`
that reads one call per line - the machine (`sm_arch`, `cudnnGetVersion()`'s number), the
environment, and the arguments as the Python side wrote them (enum members by their C++
names, numbers as text) - converts each by name with the compiler's own enumerators, calls the
query's entry point itself (not the harness's trampoline) and prints the answer and what TE
printed. One process per release answers every recorded call.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterable, NamedTuple

from selector_patch.te_cxx import compiler
from selector_patch.te_cxx.translation_unit import TranslationUnit, build


class Call(NamedTuple):
    """One query as the selector asked it: the machine, the environment it saw, the arguments."""

    sm_arch: int
    cudnn_version: int
    environment: tuple[tuple[str, str], ...]
    arguments: tuple[str, ...]


def _reader(parameter, unit: TranslationUnit, enums: dict[str, tuple[str, ...]]) -> str:
    """C++ that reads one argument token `token` into a variable of the parameter's type."""
    name = parameter.name
    if parameter.kind == "enum":
        members = enums[parameter.enum]
        qualified = next(e for e in unit.enums if e.rsplit("::", 1)[-1] == parameter.enum)
        cases = " ".join(
            f'if (token == "{member}") return static_cast<long long>({qualified}::{member});'
            for member in members
        )
        return (
            f"  in >> token;\n  const {parameter.type} {name} = static_cast<{parameter.type}>("
            f'[&]() -> long long {{ {cases} throw std::runtime_error("unknown member " + token); }}());'
        )
    if parameter.kind == "bool":
        return f'  in >> token;\n  const bool {name} = token == "1";'
    return f"  {parameter.type} {name};\n  in >> {name};"


def driver_source(unit: TranslationUnit, enums: dict[str, tuple[str, ...]]) -> str:
    readers = "\n".join(_reader(p, unit, enums) for p in unit.parameters)
    passed = ", ".join(p.name for p in unit.parameters)
    return f"""{unit.text}
#include <map>

namespace {{
std::map<std::string, std::string> environment;

long lookup(const char *name, char *buffer, std::size_t size) {{
  const auto found = environment.find(name);
  if (found == environment.end()) return -1;
  std::snprintf(buffer, size, "%s", found->second.c_str());
  return static_cast<long>(found->second.size());
}}
}}  // namespace

int main() {{
  std::string line;
  while (std::getline(std::cin, line)) {{
    std::istringstream in(line);
    std::string token;
    te_attn_guards::Machine machine{{0, 0, &lookup}};
    int variables = 0;
    in >> machine.sm_arch >> machine.cudnn_version >> variables;
    environment.clear();
    for (int i = 0; i < variables; ++i) {{
      std::string name, value;
      in >> name >> value;
      environment[name] = value;
    }}
    te_attn_guards::machine = &machine;
    te_attn_guards::log.str("");
{readers}
    try {{
      const long long answer = static_cast<long long>(::{unit.entry}({passed}));
      std::string printed = te_attn_guards::log.str();
      std::replace(printed.begin(), printed.end(), '\\n', '|');
      std::cout << answer << " " << printed << std::endl;
    }} catch (const std::exception &failure) {{
      std::cout << "throws " << failure.what() << std::endl;
    }}
  }}
  return 0;
}}
"""


def oracle(tree: Path, enums: dict[str, tuple[str, ...]]) -> Path:
    """The oracle program for `tree`, from the cache where it was compiled before (the
    harness's own libraries are: once per source text and compiler, `te_cxx.compiler`)."""
    return compiler.program(driver_source(build(tree), enums), tree, "oracle", "as the oracle")


def ask(program: Path, calls: Iterable[Call]) -> list[str]:
    """The oracle's answer to each call: `"<value> <printed|lines>"` or `"throws <message>"`."""
    lines = [
        " ".join(
            (
                str(call.sm_arch),
                str(call.cudnn_version),
                str(len(call.environment)),
                *(f"{name} {value}" for name, value in call.environment),
                *call.arguments,
            )
        )
        for call in calls
    ]
    completed = subprocess.run(
        [str(program)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True
    )
    return completed.stdout.splitlines()

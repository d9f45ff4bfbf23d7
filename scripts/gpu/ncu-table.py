"""Per-step kernel table from `ncu --csv --page raw` output of profile-steps.ts.

Steps are split after each sampling kernel (the last launch of every forward); each step is labelled with
the scenario names given on the command line, in order. For every step: per kernel name, launches, total
time, share of the step, and DRAM bytes read/written as GB/s.
  usage: python3 ncu-table.py <ncu.csv> <scenario>... > table.md
"""
import csv
import sys
from collections import OrderedDict


def short(name: str) -> str:
    name = name.split("(")[0]
    for prefix in ("void ", "ferrum::", "(anonymous namespace)::"):
        name = name.replace(prefix, "")
    return name[:70]


def main() -> None:
    path, scenarios = sys.argv[1], sys.argv[2:]
    with open(path) as f:
        lines = [line for line in f if line.startswith('"')]
    rows = list(csv.DictReader(lines))
    rows = [r for r in rows if r.get("Kernel Name") and r.get("gpu__time_duration.sum", "").replace(".", "").replace(",", "").isdigit()]
    # profile-steps.ts profiles its forwards only, and each ends with its sampling kernel. (The embedding kernel
    # also gathers the sampled rows' states before a prefill's last layer, so it does not mark a step's start.)
    steps: list[list[dict]] = [[]]
    for r in rows:
        steps[-1].append(r)
        if "samplingKernel" in r["Kernel Name"]:
            steps.append([])
    steps = [step for step in steps if step]
    for i, step in enumerate(steps):
        label = scenarios[i] if i < len(scenarios) else f"step {i}"
        table: "OrderedDict[str, list[float]]" = OrderedDict()
        for r in step:
            key = short(r["Kernel Name"]) + f" [{r.get('Grid Size', '')}]"
            ns = float(r["gpu__time_duration.sum"].replace(",", ""))
            read = float(r.get("dram__bytes_read.sum", "0").replace(",", "") or 0)
            write = float(r.get("dram__bytes_write.sum", "0").replace(",", "") or 0)
            entry = table.setdefault(key, [0, 0.0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += ns
            entry[2] += read
            entry[3] += write
        total = sum(e[1] for e in table.values())
        print(f"\n### {label}: {len(step)} kernels, {total / 1e3:.1f} µs of kernel time\n")
        print("| kernel [grid] | launches | µs | share | read GB/s | write GB/s |")
        print("| --- | --- | --- | --- | --- | --- |")
        for key, (n, ns, read, write) in sorted(table.items(), key=lambda kv: -kv[1][1]):
            print(f"| {key} | {n} | {ns / 1e3:.1f} | {100 * ns / total:.1f}% | {read / ns:.0f} | {write / ns:.0f} |")


main()

#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's source view exported as CSV.

The GPU host has only ncu's command line, whose source page is a table of every SASS line with
its warp stall samples. This sums the samples by stall reason and lists the lines that hold the
most, with the instructions around them, so a barrier or a wait can be told from its neighbours:

  ncu --clock-control none --section SourceCounters --import-source no -k regex:wgmma_kernel \\
      -c 1 -o wgmma svdserve_reconstruct_bench --quick --size 1024x1024 --rank 64
  ncu --import wgmma.ncu-rep --page source --csv --print-source sass > wgmma_source.csv
  tests/bench/ncu_source_stalls.py wgmma_source.csv [--top 20] [--context 3]

Percentages are of all samples. The sample of a warp waiting at a barrier lands on the
instruction after the barrier (the one it cannot issue yet).
"""

import argparse
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def read_table(path):
    """The header and rows of the source table (the CSV's first line names the kernel)."""
    with open(path, newline="") as f:
        lines = list(csv.reader(f))
    for i, line in enumerate(lines):
        if SAMPLES in line:
            return line, lines[i + 1:]
    sys.exit(f"{path}: no '{SAMPLES}' column; export with --page source --csv")


def count(value):
    return int(value) if value.isdigit() else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="ncu --page source --csv --print-source sass output")
    parser.add_argument("--top", type=int, default=20, help="lines to list (default 20)")
    parser.add_argument("--context", type=int, default=2, help="instructions shown before each")
    args = parser.parse_args()

    header, rows = read_table(args.csv)
    samples = header.index(SAMPLES)
    executed = header.index(EXECUTED)
    source = header.index("Source")
    reasons = [i for i, name in enumerate(header)
               if name.startswith("stall_") and not name.endswith("(Not Issued)")]
    total = sum(count(row[samples]) for row in rows)
    if total == 0:
        sys.exit("no stall samples in the table")

    print(f"{total} samples over {len(rows)} instructions; by reason:")
    by_reason = {header[i]: sum(count(row[i]) for row in rows) for i in reasons}
    # Some samples carry a reason the export has no column for (on sm_90, most of those at the
    # wgmma instructions).
    by_reason["(not named in the export)"] = total - sum(by_reason.values())
    for name, n in sorted(by_reason.items(), key=lambda item: -item[1]):
        if n:
            print(f"  {name:28} {100.0 * n / total:5.1f} %")

    print(f"\nthe {args.top} lines with the most samples (line: instruction, % of samples, "
          "times executed, top reasons):")
    top = sorted(range(len(rows)), key=lambda i: -count(rows[i][samples]))[:args.top]
    for i in sorted(top):
        for j in range(max(0, i - args.context), i):
            print(f"    {j:5}  {rows[j][source].strip()}")
        row = rows[i]
        main_reasons = sorted(((count(row[r]), header[r]) for r in reasons), reverse=True)[:2]
        reasons_text = ", ".join(f"{name} {n}" for n, name in main_reasons if n)
        print(f"  > {i:5}  {row[source].strip()}   {100.0 * count(row[samples]) / total:.1f} %, "
              f"x{row[executed]}  ({reasons_text})")


if __name__ == "__main__":
    main()

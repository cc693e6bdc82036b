#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's source view exported as CSV.

The GPU host has only ncu's command line, whose source page is a table of every SASS line with
its warp stall samples. This sums the samples by stall reason and lists the lines that hold the
most, with the instructions around them, so a barrier or a wait can be told from its neighbours:

  ncu --clock-control none --section SourceCounters --import-source no -k regex:wgmma_kernel \\
      -c 1 -o wgmma svdserve_reconstruct_bench --quick --size 1024x1024 --rank 64
  ncu --import wgmma.ncu-rep --page source --csv --print-source sass > wgmma_source.csv
  bench/ncu_source_stalls.py wgmma_source.csv [--top 20] [--context 3]

Percentages are of all samples. The sample of a warp waiting at a barrier lands on the
instruction after the barrier (the one it cannot issue yet).
"""

import argparse
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def read_table(path):
    """The header and rows of the first kernel's source table (each kernel's table starts with
    a line naming it, then the header)."""
    with open(path, newline="") as f:
        lines = list(csv.reader(f))
    for i, line in enumerate(lines):
        if SAMPLES in line:
            rows = []
            for row in lines[i + 1:]:
                if len(row) < len(line):  # the next kernel's name line
                    break
                rows.append(row)
            return line, rows
    sys.exit(f"{path}: no '{SAMPLES}' column; export with --page source --csv")


def count(value):
    """A sample or instruction count; '' and '-' are none."""
    value = value.replace(",", "").strip()
    if value in ("", "-"):
        return 0
    try:
        return int(value)
    except ValueError:
        sys.exit(f"not a count: {value!r}")


def column(header, name):
    return header.index(name) if name in header else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="ncu --page source --csv --print-source sass output")
    parser.add_argument("--top", type=int, default=20, help="lines to list (default 20)")
    parser.add_argument("--context", type=int, default=2, help="instructions shown before each")
    args = parser.parse_args()

    header, rows = read_table(args.csv)
    samples = header.index(SAMPLES)
    executed = column(header, EXECUTED)
    source = column(header, "Source")
    if source is None:
        sys.exit("no 'Source' column; export with --print-source sass")
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

    print(f"\nthe {args.top} lines with the most samples (row of the table: instruction, % of "
          "samples, times executed, top reasons):")
    top = sorted(range(len(rows)), key=lambda i: -count(rows[i][samples]))[:args.top]
    for i in sorted(top):
        for j in range(max(0, i - args.context), i):
            print(f"    {j:5}  {rows[j][source].strip()}")
        row = rows[i]
        named = [(count(row[r]), header[r]) for r in reasons]
        unnamed = count(row[samples]) - sum(n for n, _ in named)
        main_reasons = sorted(named + [(unnamed, "not named")], reverse=True)[:2]
        reasons_text = ", ".join(f"{name} {n}" for n, name in main_reasons if n)
        times = f", x{row[executed]}" if executed is not None else ""
        print(f"  > {i:5}  {row[source].strip()}   {100.0 * count(row[samples]) / total:.1f} %"
              f"{times}  ({reasons_text})")


if __name__ == "__main__":
    main()

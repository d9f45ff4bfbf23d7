"""Ferrum against Hugging Face transformers from one speed call (issue 7): reads bench-speed.ts's JSON and
bench_transformers.py's, prints a table of each pair of figures with how many times faster Ferrum is, and writes it
as JSON. Both runs take 512-token prompts; Ferrum's batch-8 figures are its c8 engine run (8 concurrent requests,
256 new tokens each), transformers' are one `generate` over a batch of 8.
  usage: python3 speed_ratio.py <ferrum speed.json> <transformers.json> <out.json>
"""
import json
import os
import sys


def main():
    ferrum_file, transformers_file, out_file = sys.argv[1], sys.argv[2], sys.argv[3]
    for name in (ferrum_file, transformers_file):
        if not os.path.exists(name):
            sys.exit(f"speed_ratio: {name} is missing (its run failed or ran out of time): no ratios")
    with open(ferrum_file) as f:
        rows = {row["figure"]: row["value"] for row in json.load(f)["rows"]}
    with open(transformers_file) as f:
        hf = json.load(f)
    itl = rows.get("c8 ITL p50 (graphs)")
    # (figure, Ferrum's value, transformers', higher is better)
    pairs = [
        ("batch 1: TTFT of a 512-token prompt (ms)", rows.get("c1 TTFT 512-token prompt"), hf["b1"]["ttftMs"], False),
        ("batch 1: decode tok/s", rows.get("c1 decode 512 in/256 out (graphs)"), hf["b1"]["decodeTokPerS"], True),
        ("batch 8: TTFT, 8 × 512 tokens (ms; Ferrum's c8 p50)", rows.get("c8 TTFT p50 (graphs)"), hf["b8"]["ttftMs"],
         False),
        ("batch 8: decode tok/s (Ferrum: 8 / c8 ITL p50)", 8e3 / itl if itl else None, hf["b8"]["decodeTokPerS"],
         True),
        (f"batch 8: output tok/s (Ferrum 256 new tokens, transformers {hf['newTokens']})",
         rows.get("c8 512/256 output tok/s (graphs)"), hf["b8"]["outputTokPerS"], True),
    ]
    table = []
    print("| figure | Ferrum | transformers | Ferrum faster by |")
    print("| --- | --- | --- | --- |")
    for name, ours, theirs, higher_better in pairs:
        if ours is None:
            print(f"| {name} | missing | {theirs:.1f} | |")
            continue
        ratio = ours / theirs if higher_better else theirs / ours
        table.append({"figure": name, "ferrum": ours, "transformers": theirs, "ferrumFasterBy": ratio})
        print(f"| {name} | {ours:.1f} | {theirs:.1f} | {ratio:.2f}× |")
    with open(out_file, "w") as f:
        json.dump({"transformers": hf["transformers"], "torch": hf["torch"], "rows": table}, f, indent=2)


if __name__ == "__main__":
    main()

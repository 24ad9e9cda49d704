/**
 * The reference solver: solution.sh writes a pipeline (ref_pipeline.py) and an entry point
 * (pipeline.sh) that runs it up to one more stage per step. Each stage is a separate step so gates can
 * check that Φ rises along the reference solution. Written independently of grader and verifier.
 */
export const SOLVER_STAGES = ['clean', 'enriched', 'report', 'summary'] as const;

export function solverPipeline(configJson: string): string {
  return `"""Reference pipeline. Usage: ref_pipeline.py INPUT_DIR OUTPUT_DIR [clean|enriched|report|summary]"""
import csv
import datetime
import decimal
import json
import os
import sqlite3
import struct
import subprocess
import sys

CFG = json.loads(r'''${configJson}''')
ORDER = ["clean", "enriched", "report", "summary"]


def records_of(path):
    suffix = path.rsplit(".", 1)[-1]
    with open(path, encoding="utf-8", newline="") as src:
        if suffix in ("csv", "tsv"):
            return list(csv.DictReader(src, delimiter="\\t" if suffix == "tsv" else ","))
        if suffix == "jsonl":
            return [json.loads(raw) for raw in src if raw.strip()]
        return [dict(pair.split("=", 1) for pair in raw.split()) for raw in src if raw.strip()]


def label_of(text):
    """An index label as the UTC ISO hour or day: local hours with an offset shifted, compact dates expanded."""
    text = text.strip()
    if len(text) == 8 and text.isdigit():
        return f"{text[:4]}-{text[4:6]}-{text[6:]}"
    if len(text) == 19 and text[13] in "+-" and text.endswith(":00"):
        moment = datetime.datetime.strptime(text[:13], "%Y-%m-%dT%H")
        shift = datetime.timedelta(hours=int(text[14:16]))
        return (moment - shift if text[13] == "+" else moment + shift).strftime("%Y-%m-%dT%H")
    return text


def facts_of(base):
    folder = os.path.join(base, CFG["shard_dir"])
    with open(os.path.join(folder, CFG["index"]), encoding="utf-8", newline="") as src:
        parts = sorted((label_of(entry[CFG["fact"]["partition"]]), entry["file"]) for entry in csv.DictReader(src, delimiter="\\t"))
    keys = CFG["fact"]
    known, kept = set(), []

    def admit(record, label):
        record = {CFG["renames"].get(k, k): v for k, v in record.items()}
        for key, scale in CFG["units"].items():
            if key in record:
                record[keys["amount"]] = int(decimal.Decimal(str(record.pop(key))) * decimal.Decimal(scale))
        ident = str(record[keys["id"]])
        if ident not in known:
            known.add(ident)
            # A key qualified with its group ("qpu-east:q03") names the plain id; a negated measure its magnitude.
            kept.append((label, ident, str(record[keys["a"]]).split(":")[-1], str(record[keys["b"]]), abs(int(record[keys["amount"]]))))

    for label, name in parts:
        for record in records_of(os.path.join(folder, name)):
            admit(record, label)
    late = os.path.join(folder, "late")
    if os.path.isdir(late):
        for name in sorted(os.listdir(late)):
            if name.endswith(".jsonl"):
                for record in records_of(os.path.join(late, name)):
                    admit(record, record[keys["partition"]])
    kept.sort(key=lambda item: (item[0], item[1]))
    return kept


def regions_of(base):
    dim = CFG["dim_a"]
    with open(os.path.join(base, dim["file"]), encoding="utf-8", newline="") as src:
        if dim["format"] == "manifest":
            rows, entry = [], None
            for raw in src:
                stripped = raw.rstrip("\\n")
                if stripped.startswith("  - "):
                    entry = {}
                    rows.append(entry)
                    stripped = "    " + stripped[4:]
                if entry is not None and stripped.startswith("    ") and ": " in stripped:
                    field, _, value = stripped.strip().partition(": ")
                    entry[field] = value
        elif dim["format"] == "csv":
            rows = list(csv.DictReader(src))
        else:
            rows = json.load(src)
    aliases = dim["aliases"]
    rows = [{aliases.get(field, field): value for field, value in row.items()} for row in rows]
    return {str(row[dim["id"]]): str(row.get(dim["group"], "")) for row in rows}


def catalog_of(base):
    dim = CFG["dim_b"]
    location = os.path.join(base, dim["file"])
    if dim["format"] == "safetensors":
        with open(location, "rb") as blob:
            size = struct.unpack("<Q", blob.read(8))[0]
            head = json.loads(blob.read(size))
            payload = blob.read()
        tensor = head[dim["unit"]]
        start, stop = tensor["data_offsets"]
        units = struct.unpack("<%dq" % tensor["shape"][0], payload[start:stop])
        rows = list(zip(json.loads(head["__metadata__"]["ids"]), json.loads(head["__metadata__"]["categories"]), units))
    elif dim["format"] == "elf":
        printed = subprocess.run([location], capture_output=True, text=True, check=True).stdout
        rows = [(r[dim["id"]], r[dim["category"]], r[dim["unit"]]) for r in csv.DictReader(printed.splitlines(), delimiter="\t")]
    elif dim["format"] == "sql":
        link = sqlite3.connect(location)
        try:
            rows = link.execute(f'SELECT {dim["id"]}, {dim["category"]}, {dim["unit"]} FROM {dim["table"]}').fetchall()
        finally:
            link.close()
    else:
        with open(location, encoding="utf-8", newline="") as src:
            rows = [(r[dim["id"]], r[dim["category"]], r[dim["unit"]]) for r in csv.DictReader(src, delimiter="\\t")]
    return {str(code): (str(kind).strip().lower(), int(unit)) for code, kind, unit in rows}


def emit(path, header, rows):
    with open(path, "w", encoding="utf-8", newline="") as sink:
        out = csv.writer(sink, lineterminator="\\n")
        out.writerow(header)
        out.writerows(rows)


def run(base, target, last):
    os.makedirs(target, exist_ok=True)
    depth = ORDER.index(last)
    names, keys = CFG["outputs"], CFG["fact"]
    facts = facts_of(base)
    emit(os.path.join(target, names["clean"]), [keys["id"], keys["a"], keys["b"], keys["amount"], keys["partition"]],
         [[i, a, b, n, label] for label, i, a, b, n in facts])
    if depth < 1:
        return
    regions, catalog = regions_of(base), catalog_of(base)
    joined = [(i, label, regions[a], catalog[b][0], n * catalog[b][1]) for label, i, a, b, n in facts]
    emit(os.path.join(target, names["enriched"]), CFG["enriched_header"], [list(j) for j in joined])
    if depth < 2:
        return
    buckets = {}
    for _, _, region, kind, value in joined:
        count, total = buckets.get((region, kind), (0, 0))
        buckets[(region, kind)] = (count + 1, total + value)
    table = [[region, kind, c, t] for (region, kind), (c, t) in sorted(buckets.items())]
    emit(os.path.join(target, names["report"]), CFG["report_header"], table)
    if depth < 3:
        return
    overview = {"records": len(facts), "partitions": len({f[0] for f in facts}),
                "total": sum(row[3] for row in table), "groups": len(table)}
    with open(os.path.join(target, names["summary"]), "w", encoding="utf-8") as sink:
        sink.write(json.dumps(overview, indent=2) + "\\n")


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "summary")
`;
}

export interface SolverStep { name: string; script: string }

const PIPELINE_OPEN = `cat > "$APP/ref_pipeline.py" <<'TBRL_PIPELINE'`;
const PIPELINE_CLOSE = 'TBRL_PIPELINE';

/**
 * The bytes of ref_pipeline.py as the steps write it (the here-document of the first step), or
 * undefined when no step writes one. The gates declare this script (and its near-miss variants) to
 * the gate server as their own, so its runs may go to reused processes (gates.ts).
 */
export function referencePipelineOf(steps: SolverStep[]): string | undefined {
  for (const step of steps) {
    const open = step.script.indexOf(`${PIPELINE_OPEN}\n`);
    if (open < 0) continue;
    const body = step.script.slice(open + PIPELINE_OPEN.length + 1);
    const close = body.indexOf(`\n${PIPELINE_CLOSE}\n`);
    if (close >= 0) return body.slice(0, close + 1);
  }
  return undefined;
}

/**
 * The entry point the instruction asks for, running the reference pipeline up to `stage`. It finds
 * ref_pipeline.py beside itself with bash alone (the graders run it ~80 times per task at the gates,
 * and a `readlink` + `dirname` per run were a fifth of each run's cost, issue #20); only when it is
 * itself a symlink does it resolve the link with readlink -f, as before.
 */
export function entryScript(stage: string): string {
  return [
    `cat > "$APP/pipeline.sh" <<'TBRL_ENTRY'`,
    '#!/bin/bash',
    '# Usage: pipeline.sh INPUT_DIR OUTPUT_DIR',
    'set -euo pipefail',
    'here="${0%/*}"',
    '[ "$here" != "$0" ] || here=.',
    '[ ! -L "$0" ] || here="$(dirname "$(readlink -f "$0")")"',
    `exec python3 "$here/ref_pipeline.py" "$1" "$2" ${stage}`,
    'TBRL_ENTRY',
    'chmod +x "$APP/pipeline.sh"',
    'bash "$APP/pipeline.sh" "$APP/data" "$APP/out"',
  ].join('\n');
}

/**
 * The steps of solution.sh (each runs after the prelude, in a fresh bash). The entry point grows
 * one stage per step and every output is written by running it, which is the way the instruction
 * asks for and the only way the progress grader credits.
 */
export function solverSteps(configJson: string): SolverStep[] {
  return [
    { name: 'clean', script: [`mkdir -p "$APP/out"`, PIPELINE_OPEN, solverPipeline(configJson).replace(/\n$/, ''), PIPELINE_CLOSE, entryScript('clean')].join('\n') },
    { name: 'enriched', script: entryScript('enriched') },
    { name: 'report', script: entryScript('report') },
    { name: 'summary', script: entryScript('summary') },
  ];
}

export const SOLVER_PRELUDE = ['#!/bin/bash', '# Reference solution (tbrl synth): a pipeline run stage by stage, then its entry point.', 'set -euo pipefail', 'APP="${TBRL_APP:-/app}"'].join('\n');

export function solutionScript(steps: SolverStep[]): string {
  return [SOLVER_PRELUDE, ...steps.map((s) => `# tbrl-step: ${s.name}\n${s.script}`)].join('\n') + '\n';
}

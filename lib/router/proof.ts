/**
 * Gate G's proof, run on the router host once the router reports ready: `/health` with the engine
 * count, `/v1/models` with the served model, and one completion through the router whose journal row
 * names the prefill engine and the decode engine that served it (narwhal-serve's request journal,
 * `prefill_iid` and `decode_iid`). The script gathers; `judgeRouterProof` decides.
 */
import { shq } from "../shell";

export interface ProofOptions {
  readonly runDir: string;
  readonly binDir: string;
  /** `http://<local address>:<port>`. */
  readonly baseUrl: string;
  readonly model: string;
  /** The journal beside the profile store, relative to the router's folder. */
  readonly journalPath: string;
  readonly timeoutS: number;
}

export interface RouterProof {
  readonly health: { status?: string; instances?: number; available_instances?: number } | null;
  readonly models: string[];
  readonly completion: { status: number; requestId: string; text: string | null };
  /** The journal row of that request, as narwhal-serve wrote it. */
  readonly journal: { prefill_iid?: string | null; decode_iid?: string | null; terminal?: string; crossed?: boolean; output_len?: number } | null;
}

const GATHER_PY = `
import json, sys, pathlib
run, journal, status, headers = sys.argv[1:5]
def load(p):
    try:
        return json.loads(pathlib.Path(p).read_text())
    except Exception:
        return None
rid = ""
for line in pathlib.Path(headers).read_text(errors="replace").splitlines():
    k, _, v = line.partition(":")
    if k.strip().lower() == "x-request-id":
        rid = v.strip()
body = load(run + "/proof/completion.json") or {}
choices = body.get("choices") or [{}]
row = None
jp = pathlib.Path(run) / journal
if rid and jp.exists():
    for line in jp.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("rid") == rid:
            row = {k: r.get(k) for k in ("prefill_iid", "decode_iid", "terminal", "crossed", "output_len")}
models = load(run + "/proof/models.json") or {}
print(json.dumps({
    "health": load(run + "/proof/health.json"),
    "models": [m.get("id") for m in models.get("data", []) if isinstance(m, dict)],
    "completion": {"status": int(status or 0), "requestId": rid, "text": choices[0].get("text") if isinstance(choices[0], dict) else None},
    "journal": row,
}))
`;

export function proofScript(o: ProofOptions): string {
  const t = o.timeoutS;
  const body = JSON.stringify({ model: o.model, prompt: "Narwhal router proof", max_tokens: 4, temperature: 0 });
  return `set -eu
run=${shq(o.runDir)}
base=${shq(o.baseUrl)}
mkdir -p "$run/proof"
curl -sS --max-time ${t} -o "$run/proof/health.json" "$base/health" || true
curl -sS --max-time ${t} -o "$run/proof/models.json" "$base/v1/models" || true
status=$(curl -sS --max-time ${t} -D "$run/proof/completion.headers" -o "$run/proof/completion.json" -w '%{http_code}' -H 'content-type: application/json' --data ${shq(body)} "$base/v1/completions" || true)
# The journal line is written when the response ends; give it a moment to reach the file.
sleep 0.5
${shq(`${o.binDir}/python`)} -c ${shq(GATHER_PY)} "$run" ${shq(o.journalPath)} "$status" "$run/proof/completion.headers"
`;
}

/** Problems with a proof, empty when the router serves: each names what was expected and what was found. */
export function judgeRouterProof(p: RouterProof, expected: { engineCount: number; model: string; engineIds: readonly string[] }): string[] {
  const problems: string[] = [];
  if (p.health?.status !== "ok") problems.push(`/health status is ${JSON.stringify(p.health?.status ?? null)}, expected "ok"`);
  if (p.health?.instances !== expected.engineCount) problems.push(`/health reports ${p.health?.instances ?? "no"} engines, the fleet has ${expected.engineCount}`);
  if (!p.models.includes(expected.model)) problems.push(`/v1/models lists ${JSON.stringify(p.models)}, not the served model ${JSON.stringify(expected.model)}`);
  if (p.completion.status !== 200) problems.push(`the completion through the router answered HTTP ${p.completion.status}`);
  const j = p.journal;
  if (!j) problems.push(`the router's journal has no row for request ${JSON.stringify(p.completion.requestId)}`);
  else {
    if (j.terminal !== "completed") problems.push(`the journal row ends ${JSON.stringify(j.terminal)}, not "completed"`);
    if (!j.prefill_iid || !expected.engineIds.includes(j.prefill_iid)) problems.push(`no fleet engine served the prefill leg (prefill_iid ${JSON.stringify(j.prefill_iid ?? null)})`);
    if (!j.decode_iid || !expected.engineIds.includes(j.decode_iid)) problems.push(`no fleet engine served the decode leg (decode_iid ${JSON.stringify(j.decode_iid ?? null)})`);
  }
  return problems;
}

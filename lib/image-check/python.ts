/**
 * The runbook's runtime check, run by the engine runtime's own Python (the interpreter of the native
 * `vllm`, or `python3` in a short-lived container of the image): `python -c RUNTIME_CHECK_PY <request>`.
 *
 * `<request>` is one JSON argument (see {@link RuntimeCheckRequest}). Every check runs even when an
 * earlier one failed, and each prints one line as soon as it is done:
 *
 *   NARWHAL_CHECK {"check": "<name>", "ok": true|false, ...}
 *
 * so a crash part-way still leaves the lines of what did run. Exit status 0 when every check passed,
 * 1 otherwise. Checks, in order:
 *   custom-code       `auto_map` in config.json (or text_config) or the tokenizer's tokenizer_config.json
 *                     needs `--trust-remote-code` in the plan
 *   packages          importlib.metadata versions equal the pins
 *   vllm-api-version  vllm.version.__version__ (what the live engine's /version must report)
 *   connector         KVTransferConfig(**plan's --kv-transfer-config), resolved by KVConnectorFactory
 *   ds-layout         get_conv_state_layout() == "DS", only when the model needs it
 *   tokenizer         AutoTokenizer.from_pretrained(tokenizer, trust_remote_code=<plan>, local_files_only)
 *   nixl-versions     the engine contract's connector_version and transfer_version, read without
 *                     importing vLLM (its NIXL package imports torch and zmq): NIXL_CONNECTOR_VERSION from
 *                     the source of vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py (an `ast`
 *                     read; older layouts kept it in another v1 module, found by its assignment line), and
 *                     the `nixl` (else `nixl-rocm`) distribution's version, as narwhal reads it
 */

/** The JSON argument of the check. Paths are as the runtime sees them (host paths, or `/model` in a container). */
export interface RuntimeCheckRequest {
  readonly pins: Readonly<Record<string, string>>;
  readonly kvTransferConfig: Readonly<Record<string, unknown>>;
  readonly trustRemoteCode: boolean;
  readonly dsRequired: boolean;
  readonly model: string;
  readonly tokenizer: string;
}

export const CHECK_LINE_PREFIX = "NARWHAL_CHECK ";

export const RUNTIME_CHECK_PY = String.raw`import ast
import importlib.metadata as metadata
import importlib.util
import json
import re
import sys
from pathlib import Path

request = json.loads(sys.argv[1])
results = []


def report(check, ok, **fields):
    results.append(ok)
    print("NARWHAL_CHECK " + json.dumps(dict(check=check, ok=bool(ok), **fields), sort_keys=True), flush=True)


def describe(error):
    text = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return (type(error).__name__ + ": " + text)[:1000]


def read_json(path):
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None


def custom_code():
    config = read_json(Path(request["model"]) / "config.json")
    if config is None:
        raise FileNotFoundError(request["model"] + "/config.json does not exist")
    reasons = []
    if "auto_map" in config:
        reasons.append("config.json has auto_map")
    if isinstance(config.get("text_config"), dict) and "auto_map" in config["text_config"]:
        reasons.append("config.json has text_config.auto_map")
    tokenizer_config = read_json(Path(request["tokenizer"]) / "tokenizer_config.json") or {}
    if "auto_map" in tokenizer_config:
        reasons.append(request["tokenizer"] + "/tokenizer_config.json has auto_map")
    trusted = bool(request["trustRemoteCode"])
    report("custom-code", trusted or not reasons, required=bool(reasons), trusted=trusted, reasons=reasons)


def packages():
    observed = {}
    for name in sorted(request["pins"]):
        try:
            observed[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            observed[name] = None
    mismatches = [
        {"package": name, "expected": request["pins"][name], "found": observed[name]}
        for name in sorted(observed)
        if observed[name] != request["pins"][name]
    ]
    report("packages", not mismatches, observed=observed, mismatches=mismatches)


def api_version():
    from vllm.version import __version__ as version

    report("vllm-api-version", isinstance(version, str) and bool(version.strip()), version=version)


def connector():
    from vllm.config import KVTransferConfig
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

    config = KVTransferConfig(**request["kvTransferConfig"])
    resolved = KVConnectorFactory.get_connector_class(config)
    report("connector", True, name=request["kvTransferConfig"].get("kv_connector"), resolved=resolved.__module__ + "." + resolved.__name__)


def ds_layout():
    if not request["dsRequired"]:
        report("ds-layout", True, required=False)
        return
    from vllm.model_executor.layers.mamba.mamba_utils import get_conv_state_layout

    layout = get_conv_state_layout()
    layout = str(getattr(layout, "value", layout))
    report("ds-layout", layout == "DS", required=True, layout=layout)


def tokenizer():
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(request["tokenizer"], trust_remote_code=bool(request["trustRemoteCode"]), local_files_only=True)
    report("tokenizer", loaded is not None, path=request["tokenizer"], loaded=type(loaded).__module__ + "." + type(loaded).__name__)


def nixl_versions():
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.origin:
        raise ModuleNotFoundError("No module named 'vllm'")
    v1 = Path(spec.origin).parent / "distributed" / "kv_transfer" / "kv_connector" / "v1"
    connector, source = None, None
    current = v1 / "nixl" / "metadata.py"
    if current.is_file():
        for node in ast.parse(current.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            elif isinstance(node, ast.Assign):
                targets = node.targets
            else:
                continue
            if node.value is not None and any(getattr(t, "id", None) == "NIXL_CONNECTOR_VERSION" for t in targets):
                connector, source = ast.literal_eval(node.value), str(current)
    if connector is None and v1.is_dir():
        for path in sorted(v1.rglob("*.py")):
            found = re.search(r"^NIXL_CONNECTOR_VERSION\s*(?::\s*int\s*)?=\s*(\d+)", path.read_text(encoding="utf-8", errors="replace"), re.M)
            if found:
                connector, source = int(found.group(1)), str(path)
                break
    if not (type(connector) is int and connector > 0):
        connector = None
    nixl, distribution = None, None
    for name in ("nixl", "nixl-rocm"):
        try:
            nixl, distribution = metadata.version(name), name
            break
        except metadata.PackageNotFoundError:
            pass
    report(
        "nixl-versions",
        connector is not None and bool(nixl),
        connectorVersion=connector,
        connectorSource=source,
        searched=str(v1),
        nixlVersion=nixl,
        nixlDistribution=distribution,
    )


for name, check in [
    ("custom-code", custom_code),
    ("packages", packages),
    ("vllm-api-version", api_version),
    ("connector", connector),
    ("ds-layout", ds_layout),
    ("tokenizer", tokenizer),
    ("nixl-versions", nixl_versions),
]:
    try:
        check()
    except Exception as error:
        report(name, False, error=describe(error))

sys.exit(0 if all(results) else 1)
`;

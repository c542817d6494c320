/**
 * The part of the router host's Python scripts that talks to narwhal-serve's lifecycle API on loopback
 * (the drain, lib/router/drain.ts; the readmission, lib/router/handoff.ts). `ask(path, body)` answers
 * `(status, document)` for `base + path` within `timeout` seconds, both globals the script sets first; an
 * HTTP error's JSON body is its document (narwhal answers a refusal with the lifecycle document and its
 * error), and a connection that fails raises OSError for the script to name.
 */
export const LIFECYCLE_ASK_PY = String.raw`def ask(path="", body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.load(e)
        except ValueError:
            return e.code, {}
`;

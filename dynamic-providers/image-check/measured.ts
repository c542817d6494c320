/** Inputs the check was measured against: a change means it no longer describes this engine's runtime. */
export const MEASURED_AGAINST = ["engineId", "planSha256", "runtime", "modelDir", "pins", "dsRequired", "checkScriptSha256"] as const;
/** Inputs that only change how the host is reached, where evidence goes, or the (same-hash) plan object. */
export const UPDATABLE = ["hostAlias", "stack", "login", "privateKey", "password", "deadlines", "plan"] as const;

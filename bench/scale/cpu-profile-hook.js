// Preloaded into every Node process of one CLI run (NODE_OPTIONS=--require <this file>) when
// NARWHAL_CPU_PROFILE_DIR is set: samples the process with V8's profiler from its first module load and
// writes `<pid>.cpuprofile` there as it exits, with its command line in `<pid>.argv` (bench/cli.ts tells
// the program from the provider hosts by it). Node 20 refuses --cpu-prof in NODE_OPTIONS.
"use strict";
const dir = process.env.NARWHAL_CPU_PROFILE_DIR;
if (dir) {
  const inspector = require("node:inspector");
  const fs = require("node:fs");
  const path = require("node:path");
  const session = new inspector.Session();
  session.connect();
  session.post("Profiler.enable");
  session.post("Profiler.setSamplingInterval", { interval: 500 });
  session.post("Profiler.start");
  let written = false;
  const write = () => {
    if (written) return;
    written = true;
    // A session on the process's own thread answers synchronously, so this finishes inside "exit".
    session.post("Profiler.stop", (err, result) => {
      if (err) return;
      fs.writeFileSync(path.join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
      fs.writeFileSync(path.join(dir, `${process.pid}.argv`), process.argv.join(" "));
    });
  };
  process.on("exit", write);
  // The CLI stops its provider hosts with SIGTERM or SIGINT: write first, then exit as the signal would.
  for (const signal of ["SIGTERM", "SIGINT"]) {
    process.once(signal, () => {
      write();
      process.exit(128 + (signal === "SIGTERM" ? 15 : 2));
    });
  }
}

// Mocha's spec output, then the time each test file took (the slowest first, so the suite's budget can
// be spent knowingly), then one "FAILED" line per failed test (so the tail of a long log names them),
// then the one closing line CI reads: "N passed, N failed, N skipped".
"use strict";
const path = require("node:path");
const Mocha = require("mocha");
const { EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_TEST_FAIL } = Mocha.Runner.constants;

/** Files listed in the timing table: the rest took under a second each. */
const MIN_LISTED_S = 1;

class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const spans = new Map(); // file -> { begin, end } in ms
    const failed = []; // "FAILED file: title: first line of the error"
    runner.on(EVENT_TEST_FAIL, (test, err) => {
      const file = test.file ? path.relative(process.cwd(), test.file) : "(no file)";
      const first = String((err && err.message) || err).split("\n")[0].slice(0, 300);
      failed.push(`FAILED ${file}: ${test.fullTitle()}: ${first}`);
    });
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && !spans.has(suite.file)) spans.set(suite.file, { begin: Date.now(), end: Date.now() });
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const span = suite.file && spans.get(suite.file);
      if (span) span.end = Date.now();
    });
    runner.once(EVENT_RUN_END, () => {
      const rows = [...spans].map(([file, s]) => [path.relative(process.cwd(), file), (s.end - s.begin) / 1000]).filter(([, s]) => s >= MIN_LISTED_S);
      if (rows.length > 0) {
        process.stdout.write("\ntime per test file:\n");
        for (const [file, s] of rows.sort((a, b) => b[1] - a[1])) process.stdout.write(`${s.toFixed(0).padStart(6)} s  ${file}\n`);
      }
      if (failed.length > 0) process.stdout.write(`\n${failed.join("\n")}\n`);
      const s = runner.stats;
      process.stdout.write(`\n${s.passes} passed, ${s.failures} failed, ${s.pending} skipped\n`);
    });
  }
}
module.exports = SpecWithTotals;

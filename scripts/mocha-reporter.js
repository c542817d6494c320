// Mocha's spec output, plus the one closing line CI reads: "N passed, N failed, N skipped".
"use strict";
const Mocha = require("mocha");
const { EVENT_RUN_END } = Mocha.Runner.constants;

class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats;
      process.stdout.write(`\n${s.passes} passed, ${s.failures} failed, ${s.pending} skipped\n`);
    });
  }
}
module.exports = SpecWithTotals;

/** The page's only style sheet, inline: the report opens from disk with every fetch forbidden. */
export const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;color:#1d2329;margin:24px;max-width:1200px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #ccd3da}h3{font-size:15px;margin:18px 0 4px}
.meta,.provenance{color:#4b5660;font-size:12.5px}code{font-size:12px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
svg text{font:11px system-ui,sans-serif;fill:#1d2329}svg .axis-title{font-size:12px}
.frame{fill:#fbfcfd;stroke:#9aa5b1}.grid{stroke:#e3e8ec}
.fit{fill:none;stroke:#1d2329;stroke-width:1.6}
.sample{fill:#8795a1;fill-opacity:.55}.fit-point{fill:#d9730d;stroke:#fff}.decode-point{stroke:#fff}
.heatmap .edge rect,.heatmap .empty{stroke:#fff;stroke-width:2}.heatmap .empty{fill:#f1f3f5}
.heatmap .gbps{font-size:15px;font-weight:600}.heatmap .budget{font-size:11px;fill:#33404c}
.level{margin-right:10px}.swatch{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:4px}
table{border-collapse:collapse;font-size:12.5px}th,td{border:1px solid #d6dce2;padding:3px 7px;text-align:left}
.preflight td{text-align:center;min-width:46px}
.gate-ok,.status-pass{background:#d8f0dd}.gate-fail,.status-fail,.status-invalid{background:#f6d3d3}.gate-skip,.status-info{background:#eceff2}
.slo{stroke:#b23b3b;stroke-width:1.4;stroke-dasharray:6 4}.predicted{fill:none;stroke:#1f6fb2;stroke-width:1.6;stroke-dasharray:2 3}
.measured-p50{fill:#1d2329}.measured-p99{fill:#fff;stroke:#d9730d;stroke-width:1.6}.measured.not-pass{stroke:#b23b3b;stroke-width:2.4}
.departure{fill:none;stroke:#9b3fb5;stroke-width:1.6}.point-label{font-size:10.5px;fill:#b23b3b}
.capacity td.departs{background:#efe0f5}.capacity .reasons ul{margin:0;padding-left:16px}
.empty-note{color:#6b7680;font-style:italic}
`;

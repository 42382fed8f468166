package report

// PageStyle is the style sheet the toolkit's HTML pages share (klt local's report, klt plan's
// page): the page, its sections, charts and tables; each page adds its own rules after it.
const PageStyle = `  :root { color-scheme: light; }
  * { box-sizing: border-box; }
  body { margin: 0; background: #f3f4f6; color: #1f2937;
         font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Helvetica, Arial, sans-serif; }
  main { max-width: 1120px; margin: 0 auto; padding: 28px 24px 40px; }
  h1 { font-size: 24px; margin: 0 0 4px; }
  h2 { font-size: 16px; margin: 0 0 12px; }
  h3 { font-size: 14px; margin: 16px 0 8px; }
  .meta { color: #6b7280; margin: 0; }
  section { background: #fff; border: 1px solid #e5e7eb; border-radius: 10px; padding: 20px; margin-top: 18px; }
  section.charts { padding: 8px 4px; }
  svg.chart { display: block; width: 100%; height: auto; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; font-size: 13px; }
  .scroll { overflow-x: auto; }
  footer { color: #9ca3af; font-size: 12px; margin-top: 18px; text-align: center; }
`

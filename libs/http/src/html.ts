/** Text made safe inside HTML element content and quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** A whole HTML page: `title` is escaped here; `body` (and `style`) must already be safe. */
export function htmlDocument(title: string, body: string, style?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
${style === undefined ? '' : `<style>${style}</style>\n`}</head>
<body>
${body}
</body>
</html>
`;
}

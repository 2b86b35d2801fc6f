/**
 * Text from a model or a session file as it may reach a terminal: every control character but
 * tab and newline is shown as `\xNN` (ESC, CR, BEL, DEL and the C1 controls among them), so no
 * escape sequence in it can write to the clipboard (OSC 52), retitle the window, clear the
 * screen or overwrite a line already printed (docs/security.md).
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

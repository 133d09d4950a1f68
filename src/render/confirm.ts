/** A yes/no question on the terminal that defaults to no (Ctrl-C: cancelled, nothing changed). */
export async function askYesNo(message: string): Promise<boolean> {
  const { confirm } = await import('@inquirer/prompts');
  return confirm({ message, default: false });
}

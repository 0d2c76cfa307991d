/** `spamrule serve`: placeholder until implemented. */
export async function run(_argv: string[]): Promise<number> {
  process.stderr.write('spamrule serve: not implemented yet\n');
  return 2;
}

// Decrypts a SOPS file with the npm package sops-age and prints the plain document as JSON.
// Usage: node decrypt.mjs FILE  (the age identity is read from the SOPS_AGE_KEY environment variable)
import { decryptSops } from "sops-age";

const [file] = process.argv.slice(2);
const secretKey = process.env.SOPS_AGE_KEY;
if (!file || !secretKey) {
  console.error("usage: SOPS_AGE_KEY=AGE-SECRET-KEY-1... node decrypt.mjs FILE");
  process.exit(2);
}
try {
  const plain = await decryptSops({ path: file, secretKey, fileType: "yaml" });
  process.stdout.write(JSON.stringify(plain) + "\n");
} catch (e) {
  console.error(`sops-age: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}

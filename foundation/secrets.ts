// Secrets at rest (webhook secrets, partner callback secrets, the service's private signing key) are
// sealed with AES-256-GCM under ENCRYPTION_KEY. Without one, a key is generated once into DATA_DIR
// (never in production: the configuration refuses that).
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

export function loadEncryptionKey(configured: Buffer | undefined, dataDir: string): Buffer {
  if (configured) return configured;
  const file = path.join(dataDir, "encryption.key");
  try {
    const key = Buffer.from(fs.readFileSync(file, "utf8").trim(), "hex");
    if (key.length === 32) return key;
    throw new Error(`${file} does not hold a 32-byte hex key`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    fs.mkdirSync(dataDir, { recursive: true });
    const key = randomBytes(32);
    fs.writeFileSync(file, `${key.toString("hex")}\n`, { mode: 0o600, flag: "wx" });
    return key;
  }
}

export function createSecretBox(key: Buffer): SecretBox {
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return [
        "v1",
        iv.toString("base64url"),
        cipher.getAuthTag().toString("base64url"),
        ciphertext.toString("base64url"),
      ].join(".");
    },
    open(sealed) {
      const [version, iv, tag, ciphertext] = sealed.split(".");
      if (version !== "v1" || !iv || !tag || ciphertext === undefined)
        throw new Error("Sealed secret has an unknown format");
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()]).toString("utf8");
    },
  };
}

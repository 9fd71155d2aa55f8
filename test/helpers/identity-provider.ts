// An external identity provider on loopback: an RS256 key pair whose public half it publishes as a
// JWKS (kid "idp-1"), so tests can sign tokens the service verifies through AUTH_JWKS_URL.
import http from "node:http";
import type { Test } from "tap";
import { exportJWK, generateKeyPair, type CryptoKey } from "jose";

export interface IdentityProvider {
  /** The URL to give the service as AUTH_JWKS_URL. */
  jwksUrl: string;
  /** Signs the provider's tokens (alg RS256, kid idp-1). */
  privateKey: CryptoKey;
}

export async function startIdentityProvider(t: Test): Promise<IdentityProvider> {
  const { publicKey, privateKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "idp-1", alg: "RS256", use: "sig" };
  const idp = http.createServer((_req, res) => {
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => idp.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => idp.close(() => resolve())));
  const address = idp.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { jwksUrl: `http://127.0.0.1:${port}/jwks`, privateKey };
}

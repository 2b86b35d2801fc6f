import { describe, expect, it } from 'vitest';
import { cloudModelId, isProviderName, regionalPremium, scaledPrice } from '../../src/provider/clouds.js';
import { credentialOf, credentialPaths } from '../../src/provider/credential-names.js';
import { keptUntilExpiry } from '../../src/provider/kept-until-expiry.js';
import { requestHash } from '../../src/provider/request-hash.js';
import type { ModelRequest } from '../../src/provider/client.js';

describe("a model's id on each cloud", () => {
  it.each([
    ['anthropic', 'claude-opus-4-5-20251101', 'claude-opus-4-5-20251101'],
    ['foundry', 'claude-opus-4-5-20251101', 'claude-opus-4-5-20251101'],
    ['bedrock', 'claude-opus-4-5-20251101', 'global.anthropic.claude-opus-4-5-20251101-v1:0'],
    ['bedrock', 'claude-opus-4-6', 'global.anthropic.claude-opus-4-6-v1'],
    ['bedrock', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'],
    ['bedrock', 'anthropic.claude-3-haiku-20240307-v1:0', 'anthropic.claude-3-haiku-20240307-v1:0'],
    ['bedrock', 'arn:aws:bedrock:us-east-1:123:application-inference-profile/abc', 'arn:aws:bedrock:us-east-1:123:application-inference-profile/abc'],
    ['vertex', 'claude-opus-4-5-20251101', 'claude-opus-4-5@20251101'],
    ['vertex', 'claude-opus-4-6', 'claude-opus-4-6'],
    ['vertex', 'claude-sonnet-4-5@20250929', 'claude-sonnet-4-5@20250929'],
  ] as const)('%s: %s → %s', (provider, model, id) => {
    expect(cloudModelId(provider, model)).toBe(id);
  });

  it('knows the four providers and nothing else', () => {
    expect(['anthropic', 'bedrock', 'vertex', 'foundry'].every(isProviderName)).toBe(true);
    expect(['openai', 'Bedrock', '', 'constructor'].some(isProviderName)).toBe(false);
  });
});

describe('the regional-endpoint premium', () => {
  it('is 10% on a Bedrock profile that is not global, and on a Vertex region, for Sonnet 4.5 and later', () => {
    expect(regionalPremium('bedrock', 'claude-sonnet-4-5-20250929', undefined)).toBe(1);
    expect(regionalPremium('bedrock', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', undefined)).toBe(1.1);
    expect(regionalPremium('bedrock', 'anthropic.claude-opus-4-6-v1', undefined)).toBe(1.1);
    expect(regionalPremium('vertex', 'claude-opus-4-6', 'us-east5')).toBe(1.1);
    expect(regionalPremium('vertex', 'claude-opus-4-6', 'global')).toBe(1);
    expect(regionalPremium('vertex', 'claude-opus-4-6', undefined)).toBe(1);
    expect(regionalPremium('anthropic', 'claude-opus-4-6', 'us-east5')).toBe(1);
    expect(regionalPremium('foundry', 'claude-opus-4-6', 'us-east5')).toBe(1);
  });

  it('is none for the models before Sonnet 4.5', () => {
    for (const model of ['claude-sonnet-4-20250514', 'us.anthropic.claude-3-7-sonnet-20250219-v1:0', 'claude-opus-4-1@20250805', 'claude-3-5-haiku@20241022']) {
      expect(regionalPremium(model.includes('@') ? 'vertex' : 'bedrock', model, 'us-east5'), model).toBe(1);
    }
  });

  it('scales every rate of a price, the long-prompt tier too', () => {
    expect(scaledPrice({ input: 1, output: 5, cache_write: 1.25, cache_read: 0.1, long: { over: 10, input: 2, output: 10 } }, 1.1)).toEqual({
      input: 1.1,
      output: 5.5,
      cache_write: 1.375,
      cache_read: 0.11000000000000001,
      long: { over: 10, input: 2.2, output: 11 },
    });
    const price = { input: 3, output: 15 };
    expect(scaledPrice(price, 1)).toBe(price);
  });
});

describe('credentials', () => {
  it("say whose credential a variable is: conclave's own, the job's identity, or a cloud's in use", () => {
    expect(credentialOf('ANTHROPIC_API_KEY', [])).toBe('anthropic');
    expect(credentialOf('ACTIONS_ID_TOKEN_REQUEST_TOKEN', [])).toBe('identity');
    expect(credentialOf('AWS_SECRET_ACCESS_KEY', ['anthropic'])).toBeUndefined();
    expect(credentialOf('AWS_SECRET_ACCESS_KEY', ['anthropic', 'bedrock'])).toBe('bedrock');
    expect(credentialOf('GOOGLE_APPLICATION_CREDENTIALS', ['vertex'])).toBe('vertex');
    expect(credentialOf('GOOGLE_CLOUD_PROJECT', ['vertex'])).toBeUndefined();
    expect(credentialOf('AZURE_CLIENT_SECRET', ['foundry'])).toBe('foundry');
    expect(credentialOf('GITHUB_TOKEN', ['bedrock', 'vertex', 'foundry'])).toBeUndefined();
  });

  it("find the files and directories that hold the providers' credentials", () => {
    const env = {
      HOME: '/home/u',
      GOOGLE_APPLICATION_CREDENTIALS: '/w/gha-creds-1.json',
      AWS_WEB_IDENTITY_TOKEN_FILE: '/t/aws',
      ANTHROPIC_IDENTITY_TOKEN_FILE: '/t/anthropic',
      AZURE_FEDERATED_TOKEN_FILE: ' ',
    };
    expect(credentialPaths(env, ['vertex'])).toEqual({ files: ['/t/anthropic', '/w/gha-creds-1.json'], dirs: ['/home/u/.config/gcloud'] });
    expect(credentialPaths(env, ['bedrock', 'foundry'])).toEqual({ files: ['/t/anthropic', '/t/aws'], dirs: ['/home/u/.aws', '/home/u/.azure'] });
    expect(credentialPaths({}, ['anthropic'])).toEqual({ files: [], dirs: [] });
  });

  it('are kept until five minutes before they expire, and asked again after a failure', async () => {
    let asked = 0;
    let expiresIn = 10 * 60_000;
    const fail = { now: false };
    const get = keptUntilExpiry(async () => {
      asked++;
      if (fail.now) throw new Error('down');
      return { n: asked, expiration: new Date(Date.now() + expiresIn) };
    });
    expect((await get()).n).toBe(1);
    expect((await get()).n).toBe(1);
    expiresIn = 4 * 60_000; // the next one expires within five minutes: asked again each time
    fail.now = false;
    const real = Date.now;
    try {
      Date.now = () => real() + 6 * 60_000;
      expect((await get()).n).toBe(2);
      expect((await get()).n).toBe(3);
      fail.now = true;
      await expect(get()).rejects.toThrow('down');
      fail.now = false;
      expect((await get()).n).toBe(5);
    } finally {
      Date.now = real;
    }
  });
});

describe('the request hash and the provider', () => {
  const request = { model: 'claude-opus-4-6', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] } as ModelRequest;

  it('is unchanged for Anthropic, and differs for each cloud', () => {
    const hashes = (['anthropic', 'bedrock', 'vertex', 'foundry'] as const).map((p) => requestHash(request, p));
    expect(hashes[0]).toBe(requestHash(request));
    expect(new Set(hashes).size).toBe(4);
  });
});

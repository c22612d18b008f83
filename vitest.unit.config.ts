import { defineConfig } from 'vitest/config';

/**
 * `npm run test:unit`: the test files that need no database, no server listening and no child
 * process (parsers, version comparators, serializers, the layering check), so no global setup.
 * A file joins this list only if it imports nothing of test/helpers/db.ts, app.ts, process.ts or
 * the servers there, and spawns nothing. `npm test` (vitest.config.ts) still runs every file.
 */
export default defineConfig({
  test: {
    include: [
      'test/layering.test.ts',
      'test/config.test.ts',
      'test/model/finding-counts.test.ts',
      'test/model/fixes.test.ts',
      'test/model/layer-applications.test.ts',
      'test/single-pass.test.ts',
      'test/images/registry-events.test.ts',
      'test/ecosystems/alpine-secdb.test.ts',
      'test/ecosystems/amazon-updateinfo.test.ts',
      'test/ecosystems/apk-lister.test.ts',
      'test/ecosystems/apk-version.test.ts',
      'test/ecosystems/azurelinux.test.ts',
      'test/ecosystems/cargo-lock-lister.test.ts',
      'test/ecosystems/catalog.test.ts',
      'test/ecosystems/composer-lister.test.ts',
      'test/ecosystems/composer-version.test.ts',
      'test/ecosystems/debian-tracker.test.ts',
      'test/ecosystems/dotnet-lister.test.ts',
      'test/ecosystems/dpkg-lister.test.ts',
      'test/ecosystems/epss.test.ts',
      'test/ecosystems/go-lister.test.ts',
      'test/ecosystems/go-version.test.ts',
      'test/ecosystems/gem-lister.test.ts',
      'test/ecosystems/gem-version.test.ts',
      'test/ecosystems/java-lister.test.ts',
      'test/ecosystems/kev.test.ts',
      'test/ecosystems/maven-version.test.ts',
      'test/ecosystems/matching.test.ts',
      'test/ecosystems/npm-lister.test.ts',
      'test/ecosystems/nuget-version.test.ts',
      'test/ecosystems/nvd-feed.test.ts',
      'test/ecosystems/oracle-oval.test.ts',
      'test/ecosystems/osrelease.test.ts',
      'test/ecosystems/osv-records.test.ts',
      'test/ecosystems/pep440-version.test.ts',
      'test/ecosystems/photon.test.ts',
      'test/ecosystems/python-lister.test.ts',
      'test/ecosystems/rhel-oval.test.ts',
      'test/ecosystems/rpm-version.test.ts',
      'test/ecosystems/semver-version.test.ts',
      'test/ecosystems/suse-oval.test.ts',
      'test/ecosystems/ubuntu-oval.test.ts',
      'test/indexer/digest.test.ts',
      'test/indexer/scan.test.ts',
      'test/indexer/file-listers.test.ts',
      'test/registry/manifest.test.ts',
      'test/registry/reference.test.ts',
      'test/reports/report-cache.test.ts',
      'test/sbom/read.test.ts',
      'test/scanner/formats.test.ts',
      'test/scanner/report-schema.test.ts',
      'test/scanner/units.test.ts',
    ],
    testTimeout: 30_000,
    // Pure modules and no shared state: one module graph per worker instead of one per file.
    isolate: false,
  },
});

//! Coverage of gitleaks' default rule set (`config/gitleaks.toml`, 222
//! rules): one row per rule id, with sample lines in that rule's own shape
//! (its keyword or name around the secret, as gitleaks' own true-positive
//! samples have it), or the reason the rule cannot apply to a log line.
//! The samples were made for this test; a few are literal examples from the
//! rules' `tps` lists.

use super::{redact, MASK};

enum Case {
    /// Sample lines and the secret part of each: the secret must be gone
    /// from `redact`'s output, everything around it kept as it was.
    Lines(&'static [(&'static str, &'static str)]),
    /// A rule that does not apply to a log line, and why.
    Skip(&'static str),
}
use Case::{Lines, Skip};

/// gitleaks' default rule ids, sorted, as its `config/gitleaks.toml` lists them.
const GITLEAKS_IDS: &[&str] = &[
    "1password-secret-key",
    "1password-service-account-token",
    "adafruit-api-key",
    "adobe-client-id",
    "adobe-client-secret",
    "age-secret-key",
    "airtable-api-key",
    "airtable-personnal-access-token",
    "algolia-api-key",
    "alibaba-access-key-id",
    "alibaba-secret-key",
    "anthropic-admin-api-key",
    "anthropic-api-key",
    "artifactory-api-key",
    "artifactory-reference-token",
    "asana-client-id",
    "asana-client-secret",
    "atlassian-api-token",
    "authress-service-client-access-key",
    "aws-access-token",
    "aws-amazon-bedrock-api-key-long-lived",
    "aws-amazon-bedrock-api-key-short-lived",
    "azure-ad-client-secret",
    "beamer-api-token",
    "bitbucket-client-id",
    "bitbucket-client-secret",
    "bittrex-access-key",
    "bittrex-secret-key",
    "cisco-meraki-api-key",
    "clickhouse-cloud-api-secret-key",
    "clojars-api-token",
    "cloudflare-api-key",
    "cloudflare-global-api-key",
    "cloudflare-origin-ca-key",
    "codecov-access-token",
    "cohere-api-token",
    "coinbase-access-token",
    "confluent-access-token",
    "confluent-secret-key",
    "contentful-delivery-api-token",
    "curl-auth-header",
    "curl-auth-user",
    "databricks-api-token",
    "datadog-access-token",
    "defined-networking-api-token",
    "digitalocean-access-token",
    "digitalocean-pat",
    "digitalocean-refresh-token",
    "discord-api-token",
    "discord-client-id",
    "discord-client-secret",
    "doppler-api-token",
    "droneci-access-token",
    "dropbox-api-token",
    "dropbox-long-lived-api-token",
    "dropbox-short-lived-api-token",
    "duffel-api-token",
    "dynatrace-api-token",
    "easypost-api-token",
    "easypost-test-api-token",
    "etsy-access-token",
    "facebook-access-token",
    "facebook-page-access-token",
    "facebook-secret",
    "fastly-api-token",
    "finicity-api-token",
    "finicity-client-secret",
    "finnhub-access-token",
    "flickr-access-token",
    "flutterwave-encryption-key",
    "flutterwave-public-key",
    "flutterwave-secret-key",
    "flyio-access-token",
    "frameio-api-token",
    "freemius-secret-key",
    "freshbooks-access-token",
    "gcp-api-key",
    "generic-api-key",
    "github-app-token",
    "github-fine-grained-pat",
    "github-oauth",
    "github-pat",
    "github-refresh-token",
    "gitlab-cicd-job-token",
    "gitlab-deploy-token",
    "gitlab-feature-flag-client-token",
    "gitlab-feed-token",
    "gitlab-incoming-mail-token",
    "gitlab-kubernetes-agent-token",
    "gitlab-oauth-app-secret",
    "gitlab-pat",
    "gitlab-pat-routable",
    "gitlab-ptt",
    "gitlab-rrt",
    "gitlab-runner-authentication-token",
    "gitlab-runner-authentication-token-routable",
    "gitlab-scim-token",
    "gitlab-session-cookie",
    "gitter-access-token",
    "gocardless-api-token",
    "grafana-api-key",
    "grafana-cloud-api-token",
    "grafana-service-account-token",
    "harness-api-key",
    "hashicorp-tf-api-token",
    "hashicorp-tf-password",
    "heroku-api-key",
    "heroku-api-key-v2",
    "hubspot-api-key",
    "huggingface-access-token",
    "huggingface-organization-api-token",
    "infracost-api-token",
    "intercom-api-key",
    "intra42-client-secret",
    "jfrog-api-key",
    "jfrog-identity-token",
    "jwt",
    "jwt-base64",
    "kraken-access-token",
    "kubernetes-secret-yaml",
    "kucoin-access-token",
    "kucoin-secret-key",
    "launchdarkly-access-token",
    "linear-api-key",
    "linear-client-secret",
    "linkedin-client-id",
    "linkedin-client-secret",
    "lob-api-key",
    "lob-pub-api-key",
    "looker-client-id",
    "looker-client-secret",
    "mailchimp-api-key",
    "mailgun-private-api-token",
    "mailgun-pub-key",
    "mailgun-signing-key",
    "mapbox-api-token",
    "mattermost-access-token",
    "maxmind-license-key",
    "messagebird-api-token",
    "messagebird-client-id",
    "microsoft-teams-webhook",
    "netlify-access-token",
    "new-relic-browser-api-token",
    "new-relic-insert-key",
    "new-relic-user-api-id",
    "new-relic-user-api-key",
    "notion-api-token",
    "npm-access-token",
    "nuget-config-password",
    "nytimes-access-token",
    "octopus-deploy-api-key",
    "okta-access-token",
    "openai-api-key",
    "openshift-user-token",
    "perplexity-api-key",
    "pkcs12-file",
    "plaid-api-token",
    "plaid-client-id",
    "plaid-secret-key",
    "planetscale-api-token",
    "planetscale-oauth-token",
    "planetscale-password",
    "postman-api-token",
    "prefect-api-token",
    "private-key",
    "privateai-api-token",
    "pulumi-api-token",
    "pypi-upload-token",
    "rapidapi-access-token",
    "readme-api-token",
    "rubygems-api-token",
    "scalingo-api-token",
    "sendbird-access-id",
    "sendbird-access-token",
    "sendgrid-api-token",
    "sendinblue-api-token",
    "sentry-access-token",
    "sentry-org-token",
    "sentry-user-token",
    "settlemint-application-access-token",
    "settlemint-personal-access-token",
    "settlemint-service-access-token",
    "shippo-api-token",
    "shopify-access-token",
    "shopify-custom-access-token",
    "shopify-private-app-access-token",
    "shopify-shared-secret",
    "sidekiq-secret",
    "sidekiq-sensitive-url",
    "slack-app-token",
    "slack-bot-token",
    "slack-config-access-token",
    "slack-config-refresh-token",
    "slack-legacy-bot-token",
    "slack-legacy-token",
    "slack-legacy-workspace-token",
    "slack-user-token",
    "slack-webhook-url",
    "snyk-api-token",
    "sonar-api-token",
    "sourcegraph-access-token",
    "square-access-token",
    "squarespace-access-token",
    "stripe-access-token",
    "sumologic-access-id",
    "sumologic-access-token",
    "telegram-bot-api-token",
    "travisci-access-token",
    "twilio-api-key",
    "twitch-api-token",
    "twitter-access-secret",
    "twitter-access-token",
    "twitter-api-key",
    "twitter-api-secret",
    "twitter-bearer-token",
    "typeform-api-token",
    "vault-batch-token",
    "vault-service-token",
    "yandex-access-token",
    "yandex-api-key",
    "yandex-aws-access-token",
    "zendesk-secret-key",
];

/// One row per id of `GITLEAKS_IDS`, in the same order.
const ROWS: &[(&str, Case)] = &[
    (
        "1password-secret-key",
        Lines(&[
            (r#"op_secret_key = "A3-A4HZJC-IH8OIJCDIO8-270NF-HBZVM-NVZXP""#, r#"A3-A4HZJC-IH8OIJCDIO8-270NF-HBZVM-NVZXP"#),
        ]),
    ),
    (
        "1password-service-account-token",
        Lines(&[
            (r#"OP_SERVICE_ACCOUNT_TOKEN="ops_eyJb8oYsfroDrsehrD50AlpcZRzAQYUFAB1hgxTrAsWdl4BA3VyQC9fHRLQY9OBmNwLlwydVmZKNzo6zQ4ZgpImpyzQut8h/JV+eo+r/dG+8SEbmWK5wfqpgAyMx6ZDy7N7PrVpSyLWvfp2AsFWNA2NFIee8JHz3UAZe4XzEBPSMVoBiF9/5Jx1ei9tM8aaJWIKMFNZDEsOmycV/N8HNXYBC0gFEg0PInhPF+2sgNOf0C4sjc/84I99aREvl7ThYPXz1Ch5""#, r#"ops_eyJb8oYsfroDrsehrD50AlpcZRzAQYUFAB1hgxTrAsWdl4BA3VyQC9fHRLQY9OBmNwLlwydVmZKNzo6zQ4ZgpImpyzQut8h/JV+eo+r/dG+8SEbmWK5wfqpgAyMx6ZDy7N7PrVpSyLWvfp2AsFWNA2NFIee8JHz3UAZe4XzEBPSMVoBiF9/5Jx1ei9tM8aaJWIKMFNZDEsOmycV/N8HNXYBC0gFEg0PInhPF+2sgNOf0C4sjc/84I99aREvl7ThYPXz1Ch5"#),
        ]),
    ),
    (
        "adafruit-api-key",
        Lines(&[
            (r#"adafruit_token = "a4hzjcih8oijcdio8270nfhbzvmnvzxp""#, r#"a4hzjcih8oijcdio8270nfhbzvmnvzxp"#),
        ]),
    ),
    (
        "adobe-client-id",
        Lines(&[
            (r#"adobe_token = "007bbf5e0e6ac800750419b24346940d""#, r#"007bbf5e0e6ac800750419b24346940d"#),
        ]),
    ),
    (
        "adobe-client-secret",
        Lines(&[
            (r#"adobe_client_secret = "p8e-c4UACWzi09VY69VH6uBpJqYfDdi3Lt3T""#, r#"p8e-c4UACWzi09VY69VH6uBpJqYfDdi3Lt3T"#),
        ]),
    ),
    (
        "age-secret-key",
        Lines(&[
            (r#"# age identity
AGE-SECRET-KEY-1VGCAW344653U64YTWS28XN3UMV9X4L7KFM7FRS55NR58WTSGNCU5SY2FF7
"#, r#"AGE-SECRET-KEY-1VGCAW344653U64YTWS28XN3UMV9X4L7KFM7FRS55NR58WTSGNCU5SY2FF7"#),
        ]),
    ),
    (
        "airtable-api-key",
        Lines(&[
            (r#"airtable_token = "tl98sflmbxgzstmh3""#, r#"tl98sflmbxgzstmh3"#),
        ]),
    ),
    (
        "airtable-personnal-access-token",
        Lines(&[
            (r#"airtableToken = "pat9IU0T3VjBD9llD.4bcf6fa0fb64f9563efb42952301b572bdd919c323c5951b24c93a77fbdd5807""#, r#"pat9IU0T3VjBD9llD.4bcf6fa0fb64f9563efb42952301b572bdd919c323c5951b24c93a77fbdd5807"#),
        ]),
    ),
    (
        "algolia-api-key",
        Lines(&[
            (r#"algolia_token = "mv2zd9hrghmmvkj4d56rx5ch5i5bq54w""#, r#"mv2zd9hrghmmvkj4d56rx5ch5i5bq54w"#),
        ]),
    ),
    (
        "alibaba-access-key-id",
        Lines(&[
            (r#"alibabaToken = "LTAInn09ddlwinjybf72nn1x""#, r#"LTAInn09ddlwinjybf72nn1x"#),
        ]),
    ),
    (
        "alibaba-secret-key",
        Lines(&[
            (r#"alibaba_token = "pagys2lcihdnmtl939676zo7m3t3ui""#, r#"pagys2lcihdnmtl939676zo7m3t3ui"#),
        ]),
    ),
    (
        "anthropic-admin-api-key",
        Lines(&[
            (r#"ANTHROPIC_ADMIN_KEY="sk-ant-admin01-BctnJy_CS6uK7UDJTI7RWz31fc7R81k7_daEgYKYJl5Fu5FYx-DqJReHJndYZf7m5o7XMvjRVuKVIqptGiiB_fM4BGngWAA""#, r#"sk-ant-admin01-BctnJy_CS6uK7UDJTI7RWz31fc7R81k7_daEgYKYJl5Fu5FYx-DqJReHJndYZf7m5o7XMvjRVuKVIqptGiiB_fM4BGngWAA"#),
        ]),
    ),
    (
        "anthropic-api-key",
        Lines(&[
            (r#"export ANTHROPIC_API_KEY=sk-ant-api03-hfeztGp5klijrPWKPpVgv3-C8DdhSFCsh6soYVkG9RLYTmXgtUatFo-rzTyRcHJYWKVAOzl2OGsE7ieMTRGGT3bB4OjNPAA"#, r#"sk-ant-api03-hfeztGp5klijrPWKPpVgv3-C8DdhSFCsh6soYVkG9RLYTmXgtUatFo-rzTyRcHJYWKVAOzl2OGsE7ieMTRGGT3bB4OjNPAA"#),
        ]),
    ),
    (
        "artifactory-api-key",
        Lines(&[
            (r#"artifactoryToken = "AKCpMVp0OeCQVSVkZepp1U9NvGyxT5Ljn7i1rSFLMB6ymXs9GqZS6Tp14MHdMzVcZyDjtHRG3""#, r#"AKCpMVp0OeCQVSVkZepp1U9NvGyxT5Ljn7i1rSFLMB6ymXs9GqZS6Tp14MHdMzVcZyDjtHRG3"#),
        ]),
    ),
    (
        "artifactory-reference-token",
        Lines(&[
            (r#"artifactoryToken = "cmVmdoH9MMVKt2JeDfnygR3XnfolC2HfIzumsf1xBQfwyeWPAGYlScLCIHk3nD7n""#, r#"cmVmdoH9MMVKt2JeDfnygR3XnfolC2HfIzumsf1xBQfwyeWPAGYlScLCIHk3nD7n"#),
        ]),
    ),
    (
        "asana-client-id",
        Lines(&[
            (r#"asana_token = "5185346920163236""#, r#"5185346920163236"#),
        ]),
    ),
    (
        "asana-client-secret",
        Lines(&[
            (r#"asana_token = "tn1t8prcc4rq8m1xnzc2ympnuwtxhnep""#, r#"tn1t8prcc4rq8m1xnzc2ympnuwtxhnep"#),
        ]),
    ),
    (
        "atlassian-api-token",
        Lines(&[
            (r#"atlassian_token = "452rl0ce4jt4aaryrstp3611""#, r#"452rl0ce4jt4aaryrstp3611"#),
        ]),
    ),
    (
        "authress-service-client-access-key",
        Lines(&[
            (r#"authressToken = "sc_nmtl93.9676z.acc_7m3t3uixh7w.msykch1njpytn1t8prcc4rq8m1xnzc2""#, r#"sc_nmtl93.9676z.acc_7m3t3uixh7w.msykch1njpytn1t8prcc4rq8m1xnzc2"#),
        ]),
    ),
    (
        "aws-access-token",
        Lines(&[
            (r#"aws_access_key_id = AKIAXZAZCAFTN2363ULG"#, r#"AKIAXZAZCAFTN2363ULG"#),
        ]),
    ),
    (
        "aws-amazon-bedrock-api-key-long-lived",
        Lines(&[
            (r#"awsToken = "ABSKYtMPNUWTs9XHxNEP4nse4fc7pRqLaCEeJTze1AARYRwST46PlTZ5xOPmJ2oixU2GqktMBX6if8Treh82QTyYZrNj4OxaD0kP9tPD29ar6URGyj=""#, r#"ABSKYtMPNUWTs9XHxNEP4nse4fc7pRqLaCEeJTze1AARYRwST46PlTZ5xOPmJ2oixU2GqktMBX6if8Treh82QTyYZrNj4OxaD0kP9tPD29ar6URGyj="#),
        ]),
    ),
    (
        "aws-amazon-bedrock-api-key-short-lived",
        Lines(&[
            (r#"awsToken = "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29tDUP""#, r#"bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29tDUP"#),
        ]),
    ),
    (
        "azure-ad-client-secret",
        Lines(&[
            (r#"azureToken = "UFW6Q~jXdtuZc7AoI3CIjebFZECrEWEQRa5R0U""#, r#"UFW6Q~jXdtuZc7AoI3CIjebFZECrEWEQRa5R0U"#),
        ]),
    ),
    (
        "beamer-api-token",
        Lines(&[
            (r#"beamer_token = "b_j8ugmbx85t47qtyzn9o0dppd0urg9dup51jdtuc0o828""#, r#"b_j8ugmbx85t47qtyzn9o0dppd0urg9dup51jdtuc0o828"#),
        ]),
    ),
    (
        "bitbucket-client-id",
        Lines(&[
            (r#"bitbucket_token = "jeb542r44avpkf3wdzuym0od2c02zi7u""#, r#"jeb542r44avpkf3wdzuym0od2c02zi7u"#),
        ]),
    ),
    (
        "bitbucket-client-secret",
        Lines(&[
            (r#"bitbucket_token = "1p9qf3ditmiy3orvv0ur20veloqkhgtr21mf6gv854wj14jdquut9duho96lqi8t""#, r#"1p9qf3ditmiy3orvv0ur20veloqkhgtr21mf6gv854wj14jdquut9duho96lqi8t"#),
        ]),
    ),
    (
        "bittrex-access-key",
        Lines(&[
            (r#"bittrex_token = "y28uqekjj48j13ll36iwy5m4va5xmi4t""#, r#"y28uqekjj48j13ll36iwy5m4va5xmi4t"#),
        ]),
    ),
    (
        "bittrex-secret-key",
        Lines(&[
            (r#"bittrex_token = "kng35wieskegbdwlpex00t7dtzgegzk6""#, r#"kng35wieskegbdwlpex00t7dtzgegzk6"#),
        ]),
    ),
    (
        "cisco-meraki-api-key",
        Lines(&[
            (r#"meraki_token = "951b24c93a77fbdd5807604386f7be59eb78b8ea""#, r#"951b24c93a77fbdd5807604386f7be59eb78b8ea"#),
        ]),
    ),
    (
        "clickhouse-cloud-api-secret-key",
        Lines(&[
            (r#"clickhouseToken = "4b1dbRdW3rOcB7xLthrM4BTBGK1qPLkHigpN1bXD6z""#, r#"4b1dbRdW3rOcB7xLthrM4BTBGK1qPLkHigpN1bXD6z"#),
        ]),
    ),
    (
        "clojars-api-token",
        Lines(&[
            (r#"clojars_token = "CLOJARS_dofmyf175r8kg8p1w0d6rqlbugvz96jxmsb1k2k969sm3e3c36vtlq60giub""#, r#"CLOJARS_dofmyf175r8kg8p1w0d6rqlbugvz96jxmsb1k2k969sm3e3c36vtlq60giub"#),
        ]),
    ),
    (
        "cloudflare-api-key",
        Lines(&[
            (r#"cloudflare_token = "ym108cb38v740f635979bap6dzszrf2pk2pzl5oi""#, r#"ym108cb38v740f635979bap6dzszrf2pk2pzl5oi"#),
        ]),
    ),
    (
        "cloudflare-global-api-key",
        Lines(&[
            (r#"cloudflare_token = "24b22da66b8d8d863fc45f352ede2cc09b380""#, r#"24b22da66b8d8d863fc45f352ede2cc09b380"#),
        ]),
    ),
    (
        "cloudflare-origin-ca-key",
        Lines(&[
            (r#"cloudflare_origin_ca_key: v1.0-6f01bf099f4b3770cf78a8c4-9fa4bf67b99881887256bf1e1360bd1cc5fe89fb449447e0cc82b1fe2b9e847bd091c1b657d5e7e7713d753cf4f59808b61c0efcbf524a51ce246c275c3c0b22b3e5f06c4e8d110ebb"#, r#"v1.0-6f01bf099f4b3770cf78a8c4-9fa4bf67b99881887256bf1e1360bd1cc5fe89fb449447e0cc82b1fe2b9e847bd091c1b657d5e7e7713d753cf4f59808b61c0efcbf524a51ce246c275c3c0b22b3e5f06c4e8d110ebb"#),
        ]),
    ),
    (
        "codecov-access-token",
        Lines(&[
            (r#"codecov_token = "qgdy7dccmjqh29ffeeiuysuhxdk185o4""#, r#"qgdy7dccmjqh29ffeeiuysuhxdk185o4"#),
        ]),
    ),
    (
        "cohere-api-token",
        Lines(&[
            (r#"cohere_token = "YR4oKHP0b0dSK1w7MHpNojdD6jKKM33hSIzOLxfW""#, r#"YR4oKHP0b0dSK1w7MHpNojdD6jKKM33hSIzOLxfW"#),
        ]),
    ),
    (
        "coinbase-access-token",
        Lines(&[
            (r#"coinbase_token = "q4v7s9z6wgy9djxajph5imwmvbqrzys7xnumf1uq8jp93ec7tw6vqqw61an2ue7t""#, r#"q4v7s9z6wgy9djxajph5imwmvbqrzys7xnumf1uq8jp93ec7tw6vqqw61an2ue7t"#),
        ]),
    ),
    (
        "confluent-access-token",
        Lines(&[
            (r#"confluent_token = "uxzazcaftn0141ul""#, r#"uxzazcaftn0141ul"#),
        ]),
    ),
    (
        "confluent-secret-key",
        Lines(&[
            (r#"confluent_token = "gdofmyf175r8kg8p1w0d6rqlbugvz96jxmsb1k2k969sm3e3c36vtlq60giubm4a""#, r#"gdofmyf175r8kg8p1w0d6rqlbugvz96jxmsb1k2k969sm3e3c36vtlq60giubm4a"#),
        ]),
    ),
    (
        "contentful-delivery-api-token",
        Lines(&[
            (r#"contentful_token = "dx5bts4ixgopby4prvryjt5uiw85mpwssq6q8drroel""#, r#"dx5bts4ixgopby4prvryjt5uiw85mpwssq6q8drroel"#),
        ]),
    ),
    (
        "curl-auth-header",
        Lines(&[
            (r#"curl --header  'Authorization:  5eb4223e-5008-46e5-be67-c7b8f2732305'"#, r#"5eb4223e-5008-46e5-be67-c7b8f2732305"#),
            (r#"curl -H 'Authorization: Basic YnJvd3Nlcjo=' \"#, r#"YnJvd3Nlcjo="#),
            (r#"# curl -X GET "http://localhost:3000/api/cron/status" -H "Authorization: Bearer cfcabd11c7ed9a41b1a3e063c32d5114""#, r#"cfcabd11c7ed9a41b1a3e063c32d5114"#),
            (r#"curl -s https://api.example.com/v2/items \
  -H "X-Api-Key: 46q2Yd60AfJ0salXSL2r2JBb8d2vAsxi" \
  -H "Accept: application/json""#, r#"46q2Yd60AfJ0salXSL2r2JBb8d2vAsxi"#),
        ]),
    ),
    (
        "curl-auth-user",
        Lines(&[
            (r#"curl --cacert ca.crt -u elastic:P@ssw0rd$1 https://localhost:9200"#, r#"elastic:P@ssw0rd$1"#),
            (r#"sh-5.0$ curl -k -X POST https://infinispan:11222/rest/v2/caches/default/hello \
  -H 'Content-type: text/plain' \
  -d 'world' \
  -u developer:yqDVtkqPECriaLRi"#, r#"developer:yqDVtkqPECriaLRi"#),
            (r#"curl -u ":d2LkV78zLx!t" https://localhost:9200"#, r#"":d2LkV78zLx!t""#),
            (r#"curl --user kevin:'pRf7vG2h1L8nQkW9' -iX PATCH -H "Content-Type: application/json" -d"#, r#"kevin:'pRf7vG2h1L8nQkW9'"#),
        ]),
    ),
    (
        "databricks-api-token",
        Lines(&[
            (r#"DATABRICKS_TOKEN=dapiaa80d09defc377376cb2ee14aee8b4d6"#, r#"dapiaa80d09defc377376cb2ee14aee8b4d6"#),
        ]),
    ),
    (
        "datadog-access-token",
        Lines(&[
            (r#"datadog_token = "nw5d2dhnaw1dyyl43qs5wijsiip3ay9yr8fw6d53""#, r#"nw5d2dhnaw1dyyl43qs5wijsiip3ay9yr8fw6d53"#),
        ]),
    ),
    (
        "defined-networking-api-token",
        Lines(&[
            (r#"dnkey_token = "dnkey-ewt3ripw0asdzd87w6mlo0l2p3-oocg08plgy4i4lt7qb6rwndy8b725yx5kf8iu88ldy2ejnyfplyg""#, r#"dnkey-ewt3ripw0asdzd87w6mlo0l2p3-oocg08plgy4i4lt7qb6rwndy8b725yx5kf8iu88ldy2ejnyfplyg"#),
        ]),
    ),
    (
        "digitalocean-access-token",
        Lines(&[
            (r#"digitaloceanToken = "doo_v1_4088e0b0a3fe49723630bff167e0df3050d4045b56aeacd5d9b2ec006bff841b""#, r#"doo_v1_4088e0b0a3fe49723630bff167e0df3050d4045b56aeacd5d9b2ec006bff841b"#),
        ]),
    ),
    (
        "digitalocean-pat",
        Lines(&[
            (r#"export DIGITALOCEAN_TOKEN=dop_v1_07ab64c08fda8a20240e735d9475fd7aa619e1c0946460097a415fd245fd346b"#, r#"dop_v1_07ab64c08fda8a20240e735d9475fd7aa619e1c0946460097a415fd245fd346b"#),
        ]),
    ),
    (
        "digitalocean-refresh-token",
        Lines(&[
            (r#""refresh_token": "dor_v1_100fbf09742308d154df6daaaf4defd544db7d92135f838fdca957cb923f5a5a""#, r#"dor_v1_100fbf09742308d154df6daaaf4defd544db7d92135f838fdca957cb923f5a5a"#),
        ]),
    ),
    (
        "discord-api-token",
        Lines(&[
            (r#"discord_token = "6a5cc5d8f9a06e827bba8552b7c3af27ab4735e442a7a37896d11d1065c88be4""#, r#"6a5cc5d8f9a06e827bba8552b7c3af27ab4735e442a7a37896d11d1065c88be4"#),
        ]),
    ),
    (
        "discord-client-id",
        Lines(&[
            (r#"discord_token = "779452632044780505""#, r#"779452632044780505"#),
        ]),
    ),
    (
        "discord-client-secret",
        Lines(&[
            (r#"discord_token = "g426it9pehn8gbw55cmp2a14hbla0jai""#, r#"g426it9pehn8gbw55cmp2a14hbla0jai"#),
        ]),
    ),
    (
        "doppler-api-token",
        Lines(&[
            (r#"DOPPLER_TOKEN="dp.pt.JjmYBZhCOF6aNa35d8CTERQzXtFUGY4fMhOeNTGEiem""#, r#"dp.pt.JjmYBZhCOF6aNa35d8CTERQzXtFUGY4fMhOeNTGEiem"#),
        ]),
    ),
    (
        "droneci-access-token",
        Lines(&[
            (r#"droneci_token = "kxlnv3vz61l1t6wf3zbbnx54qicwbpux""#, r#"kxlnv3vz61l1t6wf3zbbnx54qicwbpux"#),
        ]),
    ),
    (
        "dropbox-api-token",
        Lines(&[
            (r#"dropbox_token = "miyaq41uqvea7fi""#, r#"miyaq41uqvea7fi"#),
        ]),
    ),
    (
        "dropbox-long-lived-api-token",
        Lines(&[
            (r#"dropbox_token = "a3pgl1tipk5AAAAAAAAAA0ovumdt2dzb6t6jm6jmabspvicl51eik40himwcbb4x""#, r#"a3pgl1tipk5AAAAAAAAAA0ovumdt2dzb6t6jm6jmabspvicl51eik40himwcbb4x"#),
        ]),
    ),
    (
        "dropbox-short-lived-api-token",
        Lines(&[
            (r#"dropbox_token = "sl.4atoiehaq1dk8i194m1vuu5i1341l9jj0xp0tfc8hk4rhq51yvtloz89xseh5kulv9jm1h25aad24zt56fhe64iem6vam8k24bhbceuk3f40ebvrrlvw2gmidh79zsupznam6jj""#, r#"sl.4atoiehaq1dk8i194m1vuu5i1341l9jj0xp0tfc8hk4rhq51yvtloz89xseh5kulv9jm1h25aad24zt56fhe64iem6vam8k24bhbceuk3f40ebvrrlvw2gmidh79zsupznam6jj"#),
        ]),
    ),
    (
        "duffel-api-token",
        Lines(&[
            (r#"duffelToken = "duffel_test_Qazv59dpdejOu6k81idRJIwQS4mzrhoZLOEYBazss3k""#, r#"duffel_test_Qazv59dpdejOu6k81idRJIwQS4mzrhoZLOEYBazss3k"#),
        ]),
    ),
    (
        "dynatrace-api-token",
        Lines(&[
            (r#"dynatraceToken = "dt0c01.vpkf3wdzuym0od2c02zi7u1p.9qf3ditmiy3orvv0ur20veloqkhgtr21mf6gv854wj14jdquut9duho96lqi8ty2""#, r#"dt0c01.vpkf3wdzuym0od2c02zi7u1p.9qf3ditmiy3orvv0ur20veloqkhgtr21mf6gv854wj14jdquut9duho96lqi8ty2"#),
        ]),
    ),
    (
        "easypost-api-token",
        Lines(&[
            (r#"easypostToken = "EZAKBpIaxqD7Y3RyjvqBPwGaI3crsUCl5NQfoBymRAnMOVDLjNTLBlVmwF""#, r#"EZAKBpIaxqD7Y3RyjvqBPwGaI3crsUCl5NQfoBymRAnMOVDLjNTLBlVmwF"#),
        ]),
    ),
    (
        "easypost-test-api-token",
        Lines(&[
            (r#"easypostToken = "EZTK8uqekjj48j13ll36iwy5m4va5xmi4tkng35wieskegbdwlpex00t7d""#, r#"EZTK8uqekjj48j13ll36iwy5m4va5xmi4tkng35wieskegbdwlpex00t7d"#),
        ]),
    ),
    (
        "etsy-access-token",
        Lines(&[
            (r#"etsy_token = "1f1p8axq3yjvq1w6a8crs2lf""#, r#"1f1p8axq3yjvq1w6a8crs2lf"#),
        ]),
    ),
    (
        "facebook-access-token",
        Lines(&[
            (r#"facebook 1308742762612587|rhoK1cbv0DOU_RTX_87O4MkX7AI"#, r#"1308742762612587|rhoK1cbv0DOU_RTX_87O4MkX7AI"#),
            (r#"{"facebook access_token":"911602140448729|AY-lRJZq9BoDLobvAiP25L7RcMg","token_type":"bearer"}"#, r#"911602140448729|AY-lRJZq9BoDLobvAiP25L7RcMg"#),
        ]),
    ),
    (
        "facebook-page-access-token",
        Lines(&[
            (r#"facebookToken = "EAACzgegzk6skcwe8jzsgupp4w701kqa9pnbjgrm5ow3ks3xorwr3vym108cb38v740f635979bap6dzszrf2pk2pzl5oi8rvcqrgbzz""#, r#"EAACzgegzk6skcwe8jzsgupp4w701kqa9pnbjgrm5ow3ks3xorwr3vym108cb38v740f635979bap6dzszrf2pk2pzl5oi8rvcqrgbzz"#),
        ]),
    ),
    (
        "facebook-secret",
        Lines(&[
            (r#"facebook_token = "1760708e7f059c56ade9200353479f04""#, r#"1760708e7f059c56ade9200353479f04"#),
        ]),
    ),
    (
        "fastly-api-token",
        Lines(&[
            (r#"fastly_token = "ery4hdtjm429nrxexvy1b37969esz3s0""#, r#"ery4hdtjm429nrxexvy1b37969esz3s0"#),
        ]),
    ),
    (
        "finicity-api-token",
        Lines(&[
            (r#"finicity_token = "6b28be943abafbb1cb6bf213fb13d611""#, r#"6b28be943abafbb1cb6bf213fb13d611"#),
        ]),
    ),
    (
        "finicity-client-secret",
        Lines(&[
            (r#"finicity_token = "vwv23z25pqwvok3oeto3""#, r#"vwv23z25pqwvok3oeto3"#),
        ]),
    ),
    (
        "finnhub-access-token",
        Lines(&[
            (r#"finnhub_token = "u6kq6s6du29pf833a69r""#, r#"u6kq6s6du29pf833a69r"#),
        ]),
    ),
    (
        "flickr-access-token",
        Lines(&[
            (r#"flickr_token = "clbh251j6yri028q1o8ja1et8dahtc8i""#, r#"clbh251j6yri028q1o8ja1et8dahtc8i"#),
        ]),
    ),
    (
        "flutterwave-encryption-key",
        Lines(&[
            (r#"flutterwaveToken = "FLWSECK_TEST-db48bbbge0d6""#, r#"FLWSECK_TEST-db48bbbge0d6"#),
        ]),
    ),
    (
        "flutterwave-public-key",
        Lines(&[
            (r#"flutterwaveToken = "FLWPUBK_TEST-b69d6d8641fc23f130ede0ccg7b196g0-X""#, r#"FLWPUBK_TEST-b69d6d8641fc23f130ede0ccg7b196g0-X"#),
        ]),
    ),
    (
        "flutterwave-secret-key",
        Lines(&[
            (r#"flutterwaveToken = "FLWSECK_TEST-c349ade70g9g131257fg2c047db1eg76-X""#, r#"FLWSECK_TEST-c349ade70g9g131257fg2c047db1eg76-X"#),
        ]),
    ),
    (
        "flyio-access-token",
        Lines(&[
            (r#"FLY_API_TOKEN=fo1_AIUjVQX2c6jKY7K1WfJ5fq9RKcfcwgeCifXexGFMxhD"#, r#"fo1_AIUjVQX2c6jKY7K1WfJ5fq9RKcfcwgeCifXexGFMxhD"#),
            (r#"fly_token: "fm2_KmZCFQSQ57Z4/FGSQDv6CjNC7OuHLhO5El66bIfxdo4+2tWJq15G3Dta3jNhboMfrql7LIXXH+Ci1HqUgFNGTcv0sg+obqOztr8OC8981RTA2QSlLlxEuA7V""#, r#"fm2_KmZCFQSQ57Z4/FGSQDv6CjNC7OuHLhO5El66bIfxdo4+2tWJq15G3Dta3jNhboMfrql7LIXXH+Ci1HqUgFNGTcv0sg+obqOztr8OC8981RTA2QSlLlxEuA7V"#),
        ]),
    ),
    (
        "frameio-api-token",
        Lines(&[
            (r#"frameioToken = "fio-u-5n-jrjIsnuB6m0FcaiSFPboS6LEdCIfI-Q-YFiGtdSMoRY1YlMcTuGkoCTiz-I2T""#, r#"fio-u-5n-jrjIsnuB6m0FcaiSFPboS6LEdCIfI-Q-YFiGtdSMoRY1YlMcTuGkoCTiz-I2T"#),
        ]),
    ),
    (
        "freemius-secret-key",
        Lines(&[
            (r#""secret_key" => "sk_ubb4yN3mzqGR2x8#P7r5&@*xC$utE","#, r#"sk_ubb4yN3mzqGR2x8#P7r5&@*xC$utE"#),
        ]),
    ),
    (
        "freshbooks-access-token",
        Lines(&[
            (r#"freshbooks_token = "if3sry8yq5oe0qixdptqwbk0jd58haium6ji4uo48440vwn168vwfsflp9kn63x2""#, r#"if3sry8yq5oe0qixdptqwbk0jd58haium6ji4uo48440vwn168vwfsflp9kn63x2"#),
        ]),
    ),
    (
        "gcp-api-key",
        Lines(&[
            (r#"gcpToken = "AIza7gAQqdGJtv0UnfPHIHyhswihXqakSYESp-f""#, r#"AIza7gAQqdGJtv0UnfPHIHyhswihXqakSYESp-f"#),
        ]),
    ),
    (
        "generic-api-key",
        Lines(&[
            (r#"mySecretString=Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB"#, r#"Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB"#),
            (r#""credentials" : "0afae57f3ccfd9d7f5767067bc48b30f719e271ba470488056e37ab35d4b6506""#, r#"0afae57f3ccfd9d7f5767067bc48b30f719e271ba470488056e37ab35d4b6506"#),
            (r#" utils.GetEnvOrDefault("api_token", "dafa7817-e246-48f3-91a7-e87653d587b8")"#, r#"dafa7817-e246-48f3-91a7-e87653d587b8"#),
            (r#"creds = ELY7kSmvxevmYQKJzNevDCfh1uNMo4"#, r#"ELY7kSmvxevmYQKJzNevDCfh1uNMo4"#),
        ]),
    ),
    (
        "github-app-token",
        Lines(&[
            (r#"githubToken = "ghu_BmeHzFZ23Qoz8d56hnP20O92SHI8E5NZi577""#, r#"ghu_BmeHzFZ23Qoz8d56hnP20O92SHI8E5NZi577"#),
            (r#"GITHUB_TOKEN: ghs_fi7g9Fiiog1mck0QEb0XMzXspJOuo4KzdZ53"#, r#"ghs_fi7g9Fiiog1mck0QEb0XMzXspJOuo4KzdZ53"#),
        ]),
    ),
    (
        "github-fine-grained-pat",
        Lines(&[
            (r#"github_token = "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""#, r#"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"#),
        ]),
    ),
    (
        "github-oauth",
        Lines(&[
            (r#"githubToken = "gho_tMC56I8Ak9uGwDpDgkrFWHJr5FjtiCQfmx8L""#, r#"gho_tMC56I8Ak9uGwDpDgkrFWHJr5FjtiCQfmx8L"#),
        ]),
    ),
    (
        "github-pat",
        Lines(&[
            (r#"export GITHUB_TOKEN="ghp_96bxBsVfRsgcw8Ra9pTQHEYcl5xfdbvaMASA""#, r#"ghp_96bxBsVfRsgcw8Ra9pTQHEYcl5xfdbvaMASA"#),
        ]),
    ),
    (
        "github-refresh-token",
        Lines(&[
            (r#""refresh_token": "ghr_Og3p5zBWGa5vMD59khM6GGMUx4eiUqJiRjk8""#, r#"ghr_Og3p5zBWGa5vMD59khM6GGMUx4eiUqJiRjk8"#),
        ]),
    ),
    (
        "gitlab-cicd-job-token",
        Lines(&[
            (r#"CI_JOB_TOKEN=glcbt-lof_OdrjVwupR7HXCYzP4NQS"#, r#"glcbt-lof_OdrjVwupR7HXCYzP4NQS"#),
        ]),
    ),
    (
        "gitlab-deploy-token",
        Lines(&[
            (r#"gitlabToken = "gldt-xQYzKqaytNwlOu9vzr2c""#, r#"gldt-xQYzKqaytNwlOu9vzr2c"#),
        ]),
    ),
    (
        "gitlab-feature-flag-client-token",
        Lines(&[
            (r#"gitlabToken = "glffct-z5544R8koNRik7QNnQDW""#, r#"glffct-z5544R8koNRik7QNnQDW"#),
        ]),
    ),
    (
        "gitlab-feed-token",
        Lines(&[
            (r#"https://gitlab.example.com/dashboard/projects.atom?feed_token=glft-J6CCiIUgGLHp5w2Ry60p"#, r#"glft-J6CCiIUgGLHp5w2Ry60p"#),
        ]),
    ),
    (
        "gitlab-incoming-mail-token",
        Lines(&[
            (r#"gitlab_incoming_email_token = "glimt-OT3vco0Jka6bkE_KFnX9MOVXM""#, r#"glimt-OT3vco0Jka6bkE_KFnX9MOVXM"#),
        ]),
    ),
    (
        "gitlab-kubernetes-agent-token",
        Lines(&[
            (r#"--set config.token=glagent-Up-uYT46wHtZKfQtUGZhOV3iooSDo0A5IyQk6_iVHPh3E8KALX"#, r#"glagent-Up-uYT46wHtZKfQtUGZhOV3iooSDo0A5IyQk6_iVHPh3E8KALX"#),
        ]),
    ),
    (
        "gitlab-oauth-app-secret",
        Lines(&[
            (r#"gitlabToken = "gloas-3TaUrRUyUveFuOHUeAxFQ1Q3IARmXCxfDe93tW9AACTT7IypEBn5MgulxOiGzCWp""#, r#"gloas-3TaUrRUyUveFuOHUeAxFQ1Q3IARmXCxfDe93tW9AACTT7IypEBn5MgulxOiGzCWp"#),
        ]),
    ),
    (
        "gitlab-pat",
        Lines(&[
            (r#"export GITLAB_TOKEN=glpat-GBaeOXc2gPPNAo4lgAM3"#, r#"glpat-GBaeOXc2gPPNAo4lgAM3"#),
        ]),
    ),
    (
        "gitlab-pat-routable",
        Lines(&[
            (r#"gitlabToken = "glpat-8FSojahsK9UKhJdrMlURN5xijNlF-1UqpqdNPHp4.016p2vk5k""#, r#"glpat-8FSojahsK9UKhJdrMlURN5xijNlF-1UqpqdNPHp4.016p2vk5k"#),
        ]),
    ),
    (
        "gitlab-ptt",
        Lines(&[
            (r#"curl -X POST -F token=glptt-70a1a5e905147c6bae7fa7ea2c824116e743de31 -F ref=main https://gitlab.example.com/api/v4/projects/1/trigger/pipeline"#, r#"glptt-70a1a5e905147c6bae7fa7ea2c824116e743de31"#),
        ]),
    ),
    (
        "gitlab-rrt",
        Lines(&[
            (r#"gitlabToken = "GR13489416wgy9djxajph5imwmvbq""#, r#"GR13489416wgy9djxajph5imwmvbq"#),
        ]),
    ),
    (
        "gitlab-runner-authentication-token",
        Lines(&[
            (r#"gitlab-runner register --token glrt-MFRqx8FKI_T5J1jyn8FA"#, r#"glrt-MFRqx8FKI_T5J1jyn8FA"#),
        ]),
    ),
    (
        "gitlab-runner-authentication-token-routable",
        Lines(&[
            (r#"token = "glrt-t1_nmzXlKjZxP5IOz4VFsrChyZZr1CY_L.013ithrbn""#, r#"glrt-t1_nmzXlKjZxP5IOz4VFsrChyZZr1CY_L.013ithrbn"#),
        ]),
    ),
    (
        "gitlab-scim-token",
        Lines(&[
            (r#"gitlabToken = "glsoat-6Caknx_lGM9Tg9RKLGuv""#, r#"glsoat-6Caknx_lGM9Tg9RKLGuv"#),
        ]),
    ),
    (
        "gitlab-session-cookie",
        Lines(&[
            (r#"Cookie: _gitlab_session=hpoixndkc5rkgy9fzt42xjmwlggmwr0d; path=/"#, r#"_gitlab_session=hpoixndkc5rkgy9fzt42xjmwlggmwr0d"#),
        ]),
    ),
    (
        "gitter-access-token",
        Lines(&[
            (r#"gitter_token = "g5eierjgkn3g0pbaewp9u8a9hw3spborcr58v5zp""#, r#"g5eierjgkn3g0pbaewp9u8a9hw3spborcr58v5zp"#),
        ]),
    ),
    (
        "gocardless-api-token",
        Lines(&[
            (r#"gocardless_token = "live_eqjbwt8hv6z0zftbwk6q8fhow8em65r91w3dnvib""#, r#"live_eqjbwt8hv6z0zftbwk6q8fhow8em65r91w3dnvib"#),
        ]),
    ),
    (
        "grafana-api-key",
        Lines(&[
            (r#"grafanaToken = "eyJrIjoic7kUEh1pT46UXZ8Au2ZCsoAFmlvTNabt6ebnUvv1LGm10vDOnF5MYFbkhtfrRiKrGipPb6W=""#, r#"eyJrIjoic7kUEh1pT46UXZ8Au2ZCsoAFmlvTNabt6ebnUvv1LGm10vDOnF5MYFbkhtfrRiKrGipPb6W="#),
        ]),
    ),
    (
        "grafana-cloud-api-token",
        Lines(&[
            (r#"grafanaToken = "glc_nmJCfw7E6rAXn712OyjVHSqJQe6a+riSmPNfCncwq+B6N76i==""#, r#"glc_nmJCfw7E6rAXn712OyjVHSqJQe6a+riSmPNfCncwq+B6N76i=="#),
        ]),
    ),
    (
        "grafana-service-account-token",
        Lines(&[
            (r#"GF_TOKEN=glsa_j1tjrkZJY8MJuVx28dYrB0Mq5cfuSfxE_2cece019"#, r#"glsa_j1tjrkZJY8MJuVx28dYrB0Mq5cfuSfxE_2cece019"#),
        ]),
    ),
    (
        "harness-api-key",
        Lines(&[
            (r#"harnessToken = "pat.8VKgezOF62EhjxwawDO-Wi.XIZlXPCIWe4u7XZBNXFmVscb.jyZh6wk8qsjgMFwABE29""#, r#"pat.8VKgezOF62EhjxwawDO-Wi.XIZlXPCIWe4u7XZBNXFmVscb.jyZh6wk8qsjgMFwABE29"#),
        ]),
    ),
    (
        "hashicorp-tf-api-token",
        Lines(&[
            (r#"hashicorpToken = "grqlrpse5m9yxe.atlasv1.nT1XU_3WrgWX6IVxW-F7SyOZl3I3LExh0f0ZNYl928n-8ctkWLBzb_oEQ3SuBdKblB""#, r#"grqlrpse5m9yxe.atlasv1.nT1XU_3WrgWX6IVxW-F7SyOZl3I3LExh0f0ZNYl928n-8ctkWLBzb_oEQ3SuBdKblB"#),
        ]),
    ),
    (
        "hashicorp-tf-password",
        Lines(&[
            (r#"administrator_login_password = "thisIsDog11""#, r#"thisIsDog11"#),
            (r#"password       = "rootpasswd""#, r#"rootpasswd"#),
        ]),
    ),
    (
        "heroku-api-key",
        Lines(&[
            (r#"HEROKU_API_KEY=832d2129-a846-4e27-99f4-7004b6ad53ef"#, r#"832d2129-a846-4e27-99f4-7004b6ad53ef"#),
        ]),
    ),
    (
        "heroku-api-key-v2",
        Lines(&[
            (r#"herokuToken = "HRKU-AApYLJOCa9e5a78sHi7l9rVBh5GQaHoRxHucyrAfqyPGaXZeTpBx7ayGHS9W""#, r#"HRKU-AApYLJOCa9e5a78sHi7l9rVBh5GQaHoRxHucyrAfqyPGaXZeTpBx7ayGHS9W"#),
        ]),
    ),
    (
        "hubspot-api-key",
        Lines(&[
            (r#"hubspot_token = "8845DB31-A888-6145-21C4-02BC7B3F1F56""#, r#"8845DB31-A888-6145-21C4-02BC7B3F1F56"#),
        ]),
    ),
    (
        "huggingface-access-token",
        Lines(&[
            (r#"HF_TOKEN=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"#, r#"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"#),
        ]),
    ),
    (
        "huggingface-organization-api-token",
        Lines(&[
            (r#"huggingfaceToken = "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""#, r#"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"#),
        ]),
    ),
    (
        "infracost-api-token",
        Lines(&[
            (r#"INFRACOST_API_KEY=ico-T0gYk328XwnsGX8DQ7ruJGfQXfUNBwFK"#, r#"ico-T0gYk328XwnsGX8DQ7ruJGfQXfUNBwFK"#),
        ]),
    ),
    (
        "intercom-api-key",
        Lines(&[
            (r#"intercom_token = "vxevm9zev32fhuo1me7z5ozdhn784ifig5iiogmck4bzsp9uozdt4a5i4pye""#, r#"vxevm9zev32fhuo1me7z5ozdhn784ifig5iiogmck4bzsp9uozdt4a5i4pye"#),
        ]),
    ),
    (
        "intra42-client-secret",
        Lines(&[
            (r#"intra42Token = "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""#, r#"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"#),
        ]),
    ),
    (
        "jfrog-api-key",
        Lines(&[
            (r#"jfrog_token = "s19oi5tf7vretvayua9cl9w0jvwa5o1u70zurkpt0tt280ku6w3p3gkr579r5jti2fmxbx1sf""#, r#"s19oi5tf7vretvayua9cl9w0jvwa5o1u70zurkpt0tt280ku6w3p3gkr579r5jti2fmxbx1sf"#),
        ]),
    ),
    (
        "jfrog-identity-token",
        Lines(&[
            (r#"jfrog_token = "sgcwap74clxfdbva00gpz16av3kh66xeiq9ijklofubiexl9khv376qyo8zmu28t""#, r#"sgcwap74clxfdbva00gpz16av3kh66xeiq9ijklofubiexl9khv376qyo8zmu28t"#),
        ]),
    ),
    (
        "jwt",
        Lines(&[
            (r#""Authorization": "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VybmFtZTpib2IifQ.HcfCW67Uda-0gz54ZWTqmtgJnZeNem0Q757eTa9EZuw""#, r#"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VybmFtZTpib2IifQ.HcfCW67Uda-0gz54ZWTqmtgJnZeNem0Q757eTa9EZuw"#),
            (r#"python examples/cli.py eyJhbGciOiJIUzI1NiJ9.eyJJc3N1ZXIiOiJJc3N1ZXIiLCJVc2VybmFtZSI6IkJhZFNlY3JldHMiLCJleHAiOjE1OTMxMzM0ODMsImlhdCI6MTQ2NjkwMzA4M30.ovqRikAo_0kKJ0GVrAwQlezymxrLGjcEiW_s3UJMMCo"#, r#"eyJhbGciOiJIUzI1NiJ9.eyJJc3N1ZXIiOiJJc3N1ZXIiLCJVc2VybmFtZSI6IkJhZFNlY3JldHMiLCJleHAiOjE1OTMxMzM0ODMsImlhdCI6MTQ2NjkwMzA4M30.ovqRikAo_0kKJ0GVrAwQlezymxrLGjcEiW_s3UJMMCo"#),
        ]),
    ),
    (
        "jwt-base64",
        Lines(&[
            (r#"jwtToken = "ZXlKaGJHY2lPaUpJVXpJMU5pSXNJblI1Y0NJNklrcFhWQ0o5LmV5SnpkV0lpT2lJeE1qTTBOVFkzT0Rrd0luMA==""#, r#"ZXlKaGJHY2lPaUpJVXpJMU5pSXNJblI1Y0NJNklrcFhWQ0o5LmV5SnpkV0lpT2lJeE1qTTBOVFkzT0Rrd0luMA=="#),
        ]),
    ),
    (
        "kraken-access-token",
        Lines(&[
            (r#"kraken_token = "vwlv6z6m9siamjtlf9uk64km7i1br3ooerxdqsqh26l71vm3709h8uw1kbh0rfa38afp59spg9y94tux7""#, r#"vwlv6z6m9siamjtlf9uk64km7i1br3ooerxdqsqh26l71vm3709h8uw1kbh0rfa38afp59spg9y94tux7"#),
        ]),
    ),
    (
        "kubernetes-secret-yaml",
        Lines(&[
            (r#"apiVersion: v1
kind: Secret
metadata:
  name: heketi-secret
  namespace: default
data:
  # base64 encoded password. E.g.: echo -n "mypassword" | base64
  key: bXlwYXNzd29yZA=="#, r#"bXlwYXNzd29yZA=="#),
            (r#"apiVersion: v1
data:
	password: UyFCXCpkJHpEc2I9
kind: Secret
metadata:
	name: db-user-pass
type: Opaque"#, r#"UyFCXCpkJHpEc2I9"#),
        ]),
    ),
    (
        "kucoin-access-token",
        Lines(&[
            (r#"kucoin_token = "635d9f6588f2e63b4e526b45""#, r#"635d9f6588f2e63b4e526b45"#),
        ]),
    ),
    (
        "kucoin-secret-key",
        Lines(&[
            (r#"kucoin_token = "d233b73d-6e86-a2ef-2b8a-1d7f969c8601""#, r#"d233b73d-6e86-a2ef-2b8a-1d7f969c8601"#),
        ]),
    ),
    (
        "launchdarkly-access-token",
        Lines(&[
            (r#"launchdarkly_token = "uyb16duutnh2fdnt14p9wheadjs4xsdrbitfxvt2""#, r#"uyb16duutnh2fdnt14p9wheadjs4xsdrbitfxvt2"#),
        ]),
    ),
    (
        "linear-api-key",
        Lines(&[
            (r#"LINEAR_API_KEY=lin_api_ZCwlxBmf81JnmV68wmYSt5wQRURAOfWcGt54R6HP"#, r#"lin_api_ZCwlxBmf81JnmV68wmYSt5wQRURAOfWcGt54R6HP"#),
        ]),
    ),
    (
        "linear-client-secret",
        Lines(&[
            (r#"linear_token = "fcc3c1975edea342d8184f9f1a4b4f83""#, r#"fcc3c1975edea342d8184f9f1a4b4f83"#),
        ]),
    ),
    (
        "linkedin-client-id",
        Lines(&[
            (r#"linkedin_token = "alcjo9znw6u2p5""#, r#"alcjo9znw6u2p5"#),
        ]),
    ),
    (
        "linkedin-client-secret",
        Lines(&[
            (r#"linkedin_token = "vp2ueyqfidcm2oih""#, r#"vp2ueyqfidcm2oih"#),
        ]),
    ),
    (
        "lob-api-key",
        Lines(&[
            (r#"lob_token = "live_78db314ef913295827c0d910dd06c3c6f48""#, r#"live_78db314ef913295827c0d910dd06c3c6f48"#),
        ]),
    ),
    (
        "lob-pub-api-key",
        Lines(&[
            (r#"lob_token = "test_pub_240851ee1b066e716938e3d2a081acd""#, r#"test_pub_240851ee1b066e716938e3d2a081acd"#),
        ]),
    ),
    (
        "looker-client-id",
        Lines(&[
            (r#"looker_token = "l5fqt4wd84vssqkkggr6""#, r#"l5fqt4wd84vssqkkggr6"#),
        ]),
    ),
    (
        "looker-client-secret",
        Lines(&[
            (r#"looker_token = "ocl3p3inyg301umexqwirvc3""#, r#"ocl3p3inyg301umexqwirvc3"#),
        ]),
    ),
    (
        "mailchimp-api-key",
        Lines(&[
            (r#"mailchimp_token = "a9ec5d43b1dafe908388ce3e2f45b272-us12""#, r#"a9ec5d43b1dafe908388ce3e2f45b272-us12"#),
        ]),
    ),
    (
        "mailgun-private-api-token",
        Lines(&[
            (r#"mailgun_token = "key-4c59c6868ab3953bb041871bcffaf149""#, r#"key-4c59c6868ab3953bb041871bcffaf149"#),
        ]),
    ),
    (
        "mailgun-pub-key",
        Lines(&[
            (r#"mailgun_token = "pubkey-6cf8c47903bae6d5f23ed95779d22f21""#, r#"pubkey-6cf8c47903bae6d5f23ed95779d22f21"#),
        ]),
    ),
    (
        "mailgun-signing-key",
        Lines(&[
            (r#"mailgun_token = "1c7g943cd35437548eb44603f47h63g2-4c50518h-fb5b5414""#, r#"1c7g943cd35437548eb44603f47h63g2-4c50518h-fb5b5414"#),
        ]),
    ),
    (
        "mapbox-api-token",
        Lines(&[
            (r#"mapbox_token = "pk.f9414g54bjfysnma5hpv81wknbsafn7hzsr7uoa4c2a34jqe3f64ixnd2qva.q7hvlqkbminc9imuqa6yzc""#, r#"pk.f9414g54bjfysnma5hpv81wknbsafn7hzsr7uoa4c2a34jqe3f64ixnd2qva.q7hvlqkbminc9imuqa6yzc"#),
        ]),
    ),
    (
        "mattermost-access-token",
        Lines(&[
            (r#"mattermost_token = "whn6l36amqqw4ymsx3ygrbug0w""#, r#"whn6l36amqqw4ymsx3ygrbug0w"#),
        ]),
    ),
    (
        "maxmind-license-key",
        Lines(&[
            (r#"maxmindToken = "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""#, r#"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"#),
        ]),
    ),
    (
        "messagebird-api-token",
        Lines(&[
            (r#"messagebird_token = "x6nzxxebzzyhduk45bethfuz4""#, r#"x6nzxxebzzyhduk45bethfuz4"#),
        ]),
    ),
    (
        "messagebird-client-id",
        Lines(&[
            (r#"messagebird_token = "2aeec156-ccf4-5735-b69e-8a22dbfeb5bd""#, r#"2aeec156-ccf4-5735-b69e-8a22dbfeb5bd"#),
        ]),
    ),
    (
        "microsoft-teams-webhook",
        Lines(&[
            (r#"TEAMS_WEBHOOK_URL = "https://5.webhook.office.com/webhookb2/d2dhnaw1-dyyl-43qs-5wij-siip3ay9yr8f@w6d53ewt-3rip-w0as-dzd8-7w6mlo0l2p3o/IncomingWebhook/ocg08plgy4i4lt7qb6rwndy8b725yx5k/f8iu88ld-y2ej-nyfp-lygy-awe8fw7h2k5b""#, r#"https://5.webhook.office.com/webhookb2/d2dhnaw1-dyyl-43qs-5wij-siip3ay9yr8f@w6d53ewt-3rip-w0as-dzd8-7w6mlo0l2p3o/IncomingWebhook/ocg08plgy4i4lt7qb6rwndy8b725yx5k/f8iu88ld-y2ej-nyfp-lygy-awe8fw7h2k5b"#),
        ]),
    ),
    (
        "netlify-access-token",
        Lines(&[
            (r#"netlify_token = "mf9nmwmtw0fc6t75mvvrbb37oouz4azwmp4jflemh""#, r#"mf9nmwmtw0fc6t75mvvrbb37oouz4azwmp4jflemh"#),
        ]),
    ),
    (
        "new-relic-browser-api-token",
        Lines(&[
            (r#"newrelic_token = "NRJS-ea8d5bec328be905949""#, r#"NRJS-ea8d5bec328be905949"#),
        ]),
    ),
    (
        "new-relic-insert-key",
        Lines(&[
            (r#"newrelic_token = "NRII-24cuzdom2n4hxl7suvectypkb9f56xqy""#, r#"NRII-24cuzdom2n4hxl7suvectypkb9f56xqy"#),
        ]),
    ),
    (
        "new-relic-user-api-id",
        Lines(&[
            (r#"new-relic_token = "0rre61jld9ao9zgko4m2l9dks0azvpt7gjglvwztgnuh6zw9fuyjthqy3rsudr8o""#, r#"0rre61jld9ao9zgko4m2l9dks0azvpt7gjglvwztgnuh6zw9fuyjthqy3rsudr8o"#),
        ]),
    ),
    (
        "new-relic-user-api-key",
        Lines(&[
            (r#"new_relic_api_key = "NRAK-5MVVRBB37OOUZ4AZWMP4JFLEMH8""#, r#"NRAK-5MVVRBB37OOUZ4AZWMP4JFLEMH8"#),
        ]),
    ),
    (
        "notion-api-token",
        Lines(&[
            (r#"notionToken = "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""#, r#"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"#),
        ]),
    ),
    (
        "npm-access-token",
        Lines(&[
            (r#"//registry.npmjs.org/:_authToken=npm_iaDgwHdjRfsqWQD5diH7QESnQKxEu5FLC9UE"#, r#"npm_iaDgwHdjRfsqWQD5diH7QESnQKxEu5FLC9UE"#),
        ]),
    ),
    (
        "nuget-config-password",
        Lines(&[
            (r#"<add key="ClearTextPassword" value="TestSource%Password%" />"#, r#"TestSource%Password%"#),
            (r#"<add key="Password" value="CleartextPassword1" />"#, r#"CleartextPassword1"#),
        ]),
    ),
    (
        "nytimes-access-token",
        Lines(&[
            (r#"nytimes_token = "mz24jbheedpasjgafmqd40ruxm4a2cda""#, r#"mz24jbheedpasjgafmqd40ruxm4a2cda"#),
        ]),
    ),
    (
        "octopus-deploy-api-key",
        Lines(&[
            (r#"octopusToken = "API-V0SXIVURA0AT124YHPPHO9NYWF""#, r#"API-V0SXIVURA0AT124YHPPHO9NYWF"#),
        ]),
    ),
    (
        "okta-access-token",
        Lines(&[
            (r#"okta_token = "00y2yatlq1bdpmdauzzig46vxtvsb16p9ym8otwxte""#, r#"00y2yatlq1bdpmdauzzig46vxtvsb16p9ym8otwxte"#),
        ]),
    ),
    (
        "openai-api-key",
        Lines(&[
            (r#"OPENAI_API_KEY="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""#, r#"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"#),
            (r#"openai.api_key = "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""#, r#"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"#),
        ]),
    ),
    (
        "openshift-user-token",
        Lines(&[
            (r#"openshiftToken = "sha256~33cju33rxj1njbqr28bwbug426it9pehn8gbw55cmp2""#, r#"sha256~33cju33rxj1njbqr28bwbug426it9pehn8gbw55cmp2"#),
        ]),
    ),
    (
        "perplexity-api-key",
        Lines(&[
            (r#"PERPLEXITY_API_KEY=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"#, r#"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"#),
        ]),
    ),
    (
        "pkcs12-file",
        Skip("matches a file's path (`*.p12`, `*.pfx`), not a line of text: a log names such a file, it holds no key"),
    ),
    (
        "plaid-api-token",
        Lines(&[
            (r#"plaid_token = "access-sandbox-d7f777c7-9f5f-697d-70c8-d5dc7c7546f8""#, r#"access-sandbox-d7f777c7-9f5f-697d-70c8-d5dc7c7546f8"#),
        ]),
    ),
    (
        "plaid-client-id",
        Lines(&[
            (r#"plaid_token = "y6n990t14evt2xac97i07cgw""#, r#"y6n990t14evt2xac97i07cgw"#),
        ]),
    ),
    (
        "plaid-secret-key",
        Lines(&[
            (r#"plaid_token = "umgq0lp6vpaf391zgcyp6hu0xb3qa3""#, r#"umgq0lp6vpaf391zgcyp6hu0xb3qa3"#),
        ]),
    ),
    (
        "planetscale-api-token",
        Lines(&[
            (r#"planetscaleToken = "pscale_tkn_N39jQN4Vbfr1emSPznG0wFQEbk62YneWFpP1Vc7Gb6A""#, r#"pscale_tkn_N39jQN4Vbfr1emSPznG0wFQEbk62YneWFpP1Vc7Gb6A"#),
        ]),
    ),
    (
        "planetscale-oauth-token",
        Lines(&[
            (r#"planetscaleToken = "pscale_oauth_Nl0giVJJyG4Vldk9hiMDhjTcW9tz2j3h9OQICf--LeL""#, r#"pscale_oauth_Nl0giVJJyG4Vldk9hiMDhjTcW9tz2j3h9OQICf--LeL"#),
        ]),
    ),
    (
        "planetscale-password",
        Lines(&[
            (r#"planetscale_password = "pscale_pw_xSiSc90MkwDR0C3ALwIdSk9I_Qz51ta4VL66BNM7uI3""#, r#"pscale_pw_xSiSc90MkwDR0C3ALwIdSk9I_Qz51ta4VL66BNM7uI3"#),
        ]),
    ),
    (
        "postman-api-token",
        Lines(&[
            (r#"postmanToken = "PMAK-2e4252f383f8e16e26c4bd40-13f6d8ad782e2eb804de9e233885ed0272""#, r#"PMAK-2e4252f383f8e16e26c4bd40-13f6d8ad782e2eb804de9e233885ed0272"#),
        ]),
    ),
    (
        "prefect-api-token",
        Lines(&[
            (r#"PREFECT_API_KEY=pnu_EbQJty2B1OPj9HtEjxAAyWH5vPxVCVaVkWNU"#, r#"pnu_EbQJty2B1OPj9HtEjxAAyWH5vPxVCVaVkWNU"#),
        ]),
    ),
    (
        "private-key",
        Lines(&[
            (r#"key.pem:
-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDAC4AWkdwKYSd8
Ks14IReLcYgADhoXk56ZzXI=
-----END PRIVATE KEY-----
(end)"#, r#"-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDAC4AWkdwKYSd8
Ks14IReLcYgADhoXk56ZzXI=
-----END PRIVATE KEY-----"#),
        ]),
    ),
    (
        "privateai-api-token",
        Lines(&[
            (r#"privateai_token = "ntf0d9exrrmq29xfbf4detodewby4jm1""#, r#"ntf0d9exrrmq29xfbf4detodewby4jm1"#),
        ]),
    ),
    (
        "pulumi-api-token",
        Lines(&[
            (r#"PULUMI_ACCESS_TOKEN=pul-37ef11e81fb94eeaafda090a7ce1fd73a915f09e"#, r#"pul-37ef11e81fb94eeaafda090a7ce1fd73a915f09e"#),
        ]),
    ),
    (
        "pypi-upload-token",
        Lines(&[
            (r#"password = pypi-AgEIcHlwaS5vcmcbe5QdMgTRljFROqC73K2fDFbGUj-D8OmXIlZyEytUs03SDhUOyAL7yHCuSr8vbdP-xbS9i"#, r#"pypi-AgEIcHlwaS5vcmcbe5QdMgTRljFROqC73K2fDFbGUj-D8OmXIlZyEytUs03SDhUOyAL7yHCuSr8vbdP-xbS9i"#),
        ]),
    ),
    (
        "rapidapi-access-token",
        Lines(&[
            (r#"rapidapi_token = "e17d4uv76ro9c55scslwewb40tflov07o1nslrbwf47r5vm20j""#, r#"e17d4uv76ro9c55scslwewb40tflov07o1nslrbwf47r5vm20j"#),
        ]),
    ),
    (
        "readme-api-token",
        Lines(&[
            (r#"readmeToken = "rdme_3ctym7s4iuzlejfmi6hzhnoyh7tpozd9gr5wuf41yu120hc3cpqhaso79hyejun45wpp41""#, r#"rdme_3ctym7s4iuzlejfmi6hzhnoyh7tpozd9gr5wuf41yu120hc3cpqhaso79hyejun45wpp41"#),
        ]),
    ),
    (
        "rubygems-api-token",
        Lines(&[
            (r#"GEM_HOST_API_KEY=rubygems_493545eacaf38abf71247ecfea7dcd7ccf1df8d4b6697712"#, r#"rubygems_493545eacaf38abf71247ecfea7dcd7ccf1df8d4b6697712"#),
        ]),
    ),
    (
        "scalingo-api-token",
        Lines(&[
            (r#"scalingoToken = "tk-us-TBXOiXU1MRWcf7TAdH5KOckT6gfMPSWEfTKevvOBks5CnZ9t""#, r#"tk-us-TBXOiXU1MRWcf7TAdH5KOckT6gfMPSWEfTKevvOBks5CnZ9t"#),
        ]),
    ),
    (
        "sendbird-access-id",
        Lines(&[
            (r#"sendbird_token = "0eb9ee69-9e58-d2e4-252f-383f8e16e26c""#, r#"0eb9ee69-9e58-d2e4-252f-383f8e16e26c"#),
        ]),
    ),
    (
        "sendbird-access-token",
        Lines(&[
            (r#"sendbird_token = "e57eabd90724712c8c852ae7838cdd22f87ac1c9""#, r#"e57eabd90724712c8c852ae7838cdd22f87ac1c9"#),
        ]),
    ),
    (
        "sendgrid-api-token",
        Lines(&[
            (r#"SENDGRID_API_KEY="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""#, r#"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"#),
        ]),
    ),
    (
        "sendinblue-api-token",
        Lines(&[
            (r#"sendinblueToken = "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""#, r#"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"#),
        ]),
    ),
    (
        "sentry-access-token",
        Lines(&[
            (r#"sentry_token = "a367e39e5776458afd189bb82b953e8844974a3a4168b971d43bf9a38ab84a3b""#, r#"a367e39e5776458afd189bb82b953e8844974a3a4168b971d43bf9a38ab84a3b"#),
        ]),
    ),
    (
        "sentry-org-token",
        Lines(&[
            (r#"SENTRY_AUTH_TOKEN=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"#, r#"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"#),
        ]),
    ),
    (
        "sentry-user-token",
        Lines(&[
            (r#"sentryToken = "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""#, r#"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"#),
        ]),
    ),
    (
        "settlemint-application-access-token",
        Lines(&[
            (r#"settlemintToken = "sm_aat_aBTERhOblSZaAj33""#, r#"sm_aat_aBTERhOblSZaAj33"#),
        ]),
    ),
    (
        "settlemint-personal-access-token",
        Lines(&[
            (r#"settlemintToken = "sm_pat_Qk7dZr02mWvNc9Lx""#, r#"sm_pat_Qk7dZr02mWvNc9Lx"#),
        ]),
    ),
    (
        "settlemint-service-access-token",
        Lines(&[
            (r#"settlemintToken = "sm_sat_H4tPq8sVb1XeRn6J""#, r#"sm_sat_H4tPq8sVb1XeRn6J"#),
        ]),
    ),
    (
        "shippo-api-token",
        Lines(&[
            (r#"shippoToken = "shippo_live_e930f7a19ef475e861d236215d3eb4a8aedb98f8""#, r#"shippo_live_e930f7a19ef475e861d236215d3eb4a8aedb98f8"#),
        ]),
    ),
    (
        "shopify-access-token",
        Lines(&[
            (r#"shopifyToken = "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""#, r#"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"#),
        ]),
    ),
    (
        "shopify-custom-access-token",
        Lines(&[
            (r#"shopifyToken = "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""#, r#"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"#),
        ]),
    ),
    (
        "shopify-private-app-access-token",
        Lines(&[
            (r#"shopifyToken = "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""#, r#"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"#),
        ]),
    ),
    (
        "shopify-shared-secret",
        Lines(&[
            (r#"shopifyToken = "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""#, r#"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"#),
        ]),
    ),
    (
        "sidekiq-secret",
        Lines(&[
            (r#"BUNDLE_ENTERPRISE__CONTRIBSYS__COM_token = "54cc144e:18737b11""#, r#"54cc144e:18737b11"#),
        ]),
    ),
    (
        "sidekiq-sensitive-url",
        Lines(&[
            (r#"source "https://cafebabe:deadbeef@gems.contribsys.com/" do"#, r#"cafebabe:deadbeef"#),
            (r#"http://cafeb4b3:d3adb33f@enterprise.contribsys.com:80/path?param1=true"#, r#"cafeb4b3:d3adb33f"#),
        ]),
    ),
    (
        "slack-app-token",
        Lines(&[
            (r#""token1": "xapp-1-A052FGTS2DL-5171572773297-610b6a11f4b7eb819e87b767d80e6575a3634791acb9a9ead051da879eb5b55e""#, r#"xapp-1-A052FGTS2DL-5171572773297-610b6a11f4b7eb819e87b767d80e6575a3634791acb9a9ead051da879eb5b55e"#),
        ]),
    ),
    (
        "slack-bot-token",
        Lines(&[
            (r#"SLACK_BOT_TOKEN=xoxb-908039557382-7758362096076-K08kv39tPrViUqQJJT2fu4NK"#, r#"xoxb-908039557382-7758362096076-K08kv39tPrViUqQJJT2fu4NK"#),
        ]),
    ),
    (
        "slack-config-access-token",
        Lines(&[
            (r#"slackToken = "xoxe.xoxp-1-SZDDEE5FY9UP8A34HV3EIQO4WTOIHUHD78B3KNIVCYMDL02A9AI6BPTULB7Q52YDY219O2ASTXENCZ885EEJ48PP86Q78ZTXE80PSEFL7CH72S35CT9E3IBEBKTWK9HZALMNQ50RLO4EABF8FU83JUN9GAYM8XAMQOAJ""#, r#"xoxe.xoxp-1-SZDDEE5FY9UP8A34HV3EIQO4WTOIHUHD78B3KNIVCYMDL02A9AI6BPTULB7Q52YDY219O2ASTXENCZ885EEJ48PP86Q78ZTXE80PSEFL7CH72S35CT9E3IBEBKTWK9HZALMNQ50RLO4EABF8FU83JUN9GAYM8XAMQOAJ"#),
        ]),
    ),
    (
        "slack-config-refresh-token",
        Lines(&[
            (r#"slackToken = "xoxe-1-8UT5P2Z4NEQUQIMTKRKJJXL815T89NPKKOXW896XMGU0WR6AWORVWGGI2TQX08IAK9GWIE095CH9RJJGJPEDZG6GJ2K6TAC2XRQRO4YX30DR6JO4F3UWNPSW5XCOSU7J84552K8EKNJI4RTPFH""#, r#"xoxe-1-8UT5P2Z4NEQUQIMTKRKJJXL815T89NPKKOXW896XMGU0WR6AWORVWGGI2TQX08IAK9GWIE095CH9RJJGJPEDZG6GJ2K6TAC2XRQRO4YX30DR6JO4F3UWNPSW5XCOSU7J84552K8EKNJI4RTPFH"#),
        ]),
    ),
    (
        "slack-legacy-bot-token",
        Lines(&[
            (r#"slackToken = "xoxb-7512823500-poqN4ZxjWa4J7pJWxTFRXiLi""#, r#"xoxb-7512823500-poqN4ZxjWa4J7pJWxTFRXiLi"#),
        ]),
    ),
    (
        "slack-legacy-token",
        Lines(&[
            (r#"slackToken = "xoxs-9238135505-35087222068-229581353515-6d945741a0bc95b628485e13fbb2719c253c07f6e90f284fe344f916fe192483""#, r#"xoxs-9238135505-35087222068-229581353515-6d945741a0bc95b628485e13fbb2719c253c07f6e90f284fe344f916fe192483"#),
        ]),
    ),
    (
        "slack-legacy-workspace-token",
        Lines(&[
            (r#"slackToken = "xoxa-2-vJsCBWVRhl47ozy9HIPxPD9gFJ41EA""#, r#"xoxa-2-vJsCBWVRhl47ozy9HIPxPD9gFJ41EA"#),
            (r#""refresh": "xoxr-vJymDg6W""#, r#"xoxr-vJymDg6W"#),
        ]),
    ),
    (
        "slack-user-token",
        Lines(&[
            (r#"SLACK_USER_TOKEN=xoxp-80913216371-273279338697-444574648384-e98d9eeff7348edcfe875c819977fe92"#, r#"xoxp-80913216371-273279338697-444574648384-e98d9eeff7348edcfe875c819977fe92"#),
        ]),
    ),
    (
        "slack-webhook-url",
        Lines(&[
            (r#"webhook: hooks.slack.com/services/IS5V4Vr73uCXtjucPrCiC7BALSWwWAkGm79ljlFcd7tx"#, r#"hooks.slack.com/services/IS5V4Vr73uCXtjucPrCiC7BALSWwWAkGm79ljlFcd7tx"#),
            (r#"curl -X POST https://hooks.slack.com/triggers/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 -d "{}""#, r#"https://hooks.slack.com/triggers/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"#),
        ]),
    ),
    (
        "snyk-api-token",
        Lines(&[
            (r#"snyk_token = "08b2f7fa-3c82-c676-4b4d-db71ba669e68""#, r#"08b2f7fa-3c82-c676-4b4d-db71ba669e68"#),
        ]),
    ),
    (
        "sonar-api-token",
        Lines(&[
            (r#"sonar_token = "squ_okwi4kabu5law4e3ctym7s4iuzlejfmi6hzhnoyh""#, r#"squ_okwi4kabu5law4e3ctym7s4iuzlejfmi6hzhnoyh"#),
        ]),
    ),
    (
        "sourcegraph-access-token",
        Lines(&[
            (r#"sourcegraphToken = "sgp_local_d7dfFD43cF2503B1da673EB560aAa3e80f16FA42""#, r#"sgp_local_d7dfFD43cF2503B1da673EB560aAa3e80f16FA42"#),
            (r#"sourcegraph: 6d2FabeB6ADd229Bc199FabA28fD3efb57dF0bD3"#, r#"6d2FabeB6ADd229Bc199FabA28fD3efb57dF0bD3"#),
        ]),
    ),
    (
        "square-access-token",
        Lines(&[
            (r#"squareToken = "sq0atp-csXARHdDBdP7JnbiSS9wrW""#, r#"sq0atp-csXARHdDBdP7JnbiSS9wrW"#),
            (r#"SQUARE_ACCESS_TOKEN=EAAAJwC5K99B1-1q_E70APotRbb6eQmJgGIVYrlrwsH_WA5AtEyVmdXK0SdDP0ij"#, r#"EAAAJwC5K99B1-1q_E70APotRbb6eQmJgGIVYrlrwsH_WA5AtEyVmdXK0SdDP0ij"#),
        ]),
    ),
    (
        "squarespace-access-token",
        Lines(&[
            (r#"squarespace_token = "977c138f-ba2f-dcad-ed31-e17830973c24""#, r#"977c138f-ba2f-dcad-ed31-e17830973c24"#),
        ]),
    ),
    (
        "stripe-access-token",
        Lines(&[
            (r#"stripeToken = "sk_prod_8lvJjmYBZhC""#, r#"sk_prod_8lvJjmYBZhC"#),
            (r#"Stripe.api_key = "sk_live_ETS1gBdDLZmJlBgmeJY6CZQN""#, r#"sk_live_ETS1gBdDLZmJlBgmeJY6CZQN"#),
        ]),
    ),
    (
        "sumologic-access-id",
        Lines(&[
            (r#"sumo_token = "suunEFPwpp0E9B""#, r#"suunEFPwpp0E9B"#),
        ]),
    ),
    (
        "sumologic-access-token",
        Lines(&[
            (r#"sumo_token = "ishkj6k3vyu4hruw4od6eip3z52uo0z1pyz476c14q0ixnntpoc6e7wnyue9yx0t""#, r#"ishkj6k3vyu4hruw4od6eip3z52uo0z1pyz476c14q0ixnntpoc6e7wnyue9yx0t"#),
        ]),
    ),
    (
        "telegram-bot-api-token",
        Lines(&[
            (r#"telegr_token = "596008:A3wnbq2s6ubfw73dctuwypcwsckku6nfj62""#, r#"596008:A3wnbq2s6ubfw73dctuwypcwsckku6nfj62"#),
        ]),
    ),
    (
        "travisci-access-token",
        Lines(&[
            (r#"travis_token = "o7gz4j7x402bi2it6z2lky""#, r#"o7gz4j7x402bi2it6z2lky"#),
        ]),
    ),
    (
        "twilio-api-key",
        Lines(&[
            (r#"twilioToken = "SK61e1cbcaf07c8ae2ec6d3826201ece71""#, r#"SK61e1cbcaf07c8ae2ec6d3826201ece71"#),
        ]),
    ),
    (
        "twitch-api-token",
        Lines(&[
            (r#"twitch_token = "xhrqh3ub0c1dju7tx7j10lwgvofi36""#, r#"xhrqh3ub0c1dju7tx7j10lwgvofi36"#),
        ]),
    ),
    (
        "twitter-access-secret",
        Lines(&[
            (r#"twitter_token = "2a1ekg8xa4of5asj4xjgka3j7raxudpsw4hnxkj7s8sns""#, r#"2a1ekg8xa4of5asj4xjgka3j7raxudpsw4hnxkj7s8sns"#),
        ]),
    ),
    (
        "twitter-access-token",
        Lines(&[
            (r#"twitter_token = "6689988762228674-IUOZvcb5cvDhgmWkSqRgi""#, r#"6689988762228674-IUOZvcb5cvDhgmWkSqRgi"#),
        ]),
    ),
    (
        "twitter-api-key",
        Lines(&[
            (r#"twitter_token = "glv6n186tedqfobvczfjwaw0z""#, r#"glv6n186tedqfobvczfjwaw0z"#),
        ]),
    ),
    (
        "twitter-api-secret",
        Lines(&[
            (r#"twitter_token = "iydezmz98ks0zhqc5fdgi8v9ncqutmmtx1dknarc9cx22qpjxf""#, r#"iydezmz98ks0zhqc5fdgi8v9ncqutmmtx1dknarc9cx22qpjxf"#),
        ]),
    ),
    (
        "twitter-bearer-token",
        Lines(&[
            (r#"twitter_token = "AAAAAAAAAAAAAAAAAAAAAAp0f1sh0xRsHugAB9V1RsJNzhvu24CvW7vHvv8itTY7tes3mEqUa51M0qWs84MpWUk0VLRd174v4RjaBDY""#, r#"AAAAAAAAAAAAAAAAAAAAAAp0f1sh0xRsHugAB9V1RsJNzhvu24CvW7vHvv8itTY7tes3mEqUa51M0qWs84MpWUk0VLRd174v4RjaBDY"#),
        ]),
    ),
    (
        "typeform-api-token",
        Lines(&[
            (r#"typeform_token = "tfp_FwnnOjr8YGTO4M_yq1KalE7oZNAuKR2I22lcwtJ509-e6V99AddbxNLmh_d""#, r#"tfp_FwnnOjr8YGTO4M_yq1KalE7oZNAuKR2I22lcwtJ509-e6V99AddbxNLmh_d"#),
        ]),
    ),
    (
        "vault-batch-token",
        Lines(&[
            (r#"vaultToken = "hvb.-ZgI0FXfF_M0yonAnD9jMJ6HjPToT9dbyhARrg9jHaVJeWE_I1QboD-DVtNw4RTuHH_jr26TbHsfEpZDaXwuwBfE0SUPSwqI8hpSz3ERgOo3uSSLWI5CMolDhyojCOQYCIrsd23BkBx1""#, r#"hvb.-ZgI0FXfF_M0yonAnD9jMJ6HjPToT9dbyhARrg9jHaVJeWE_I1QboD-DVtNw4RTuHH_jr26TbHsfEpZDaXwuwBfE0SUPSwqI8hpSz3ERgOo3uSSLWI5CMolDhyojCOQYCIrsd23BkBx1"#),
        ]),
    ),
    (
        "vault-service-token",
        Lines(&[
            (r#"token: s.ZC9Ecf4M5g9o34Q6RkzGsj0z"#, r#"s.ZC9Ecf4M5g9o34Q6RkzGsj0z"#),
            (r#"-vaultToken hvs.YnAghjwji3sgBjDKzEN8b1sF0AwrfJf4b-IfUyMUn1Ty7Rg3nJdkZhFQoAV_Y9ubp5B8jfoB8Y_GxpUIwWbYIS6_WqugQZ2"#, r#"hvs.YnAghjwji3sgBjDKzEN8b1sF0AwrfJf4b-IfUyMUn1Ty7Rg3nJdkZhFQoAV_Y9ubp5B8jfoB8Y_GxpUIwWbYIS6_WqugQZ2"#),
        ]),
    ),
    (
        "yandex-access-token",
        Lines(&[
            (r#"yandex_token = "t1.C=.6OXfUgA8T4Ip7PSCeHQKVgr4jdrAU3d3qgugcjUAqvaEEiYVxAu87ReEU3uZwl44GhmM6CbcLIug5tCxLr0xP2=""#, r#"t1.C=.6OXfUgA8T4Ip7PSCeHQKVgr4jdrAU3d3qgugcjUAqvaEEiYVxAu87ReEU3uZwl44GhmM6CbcLIug5tCxLr0xP2="#),
        ]),
    ),
    (
        "yandex-api-key",
        Lines(&[
            (r#"yandex_token = "AQVNZ6V5qcjMOF0RDLwnv2ZcyTHmBx3ePUvDtSs6""#, r#"AQVNZ6V5qcjMOF0RDLwnv2ZcyTHmBx3ePUvDtSs6"#),
        ]),
    ),
    (
        "yandex-aws-access-token",
        Lines(&[
            (r#"yandex_token = "YCDFjWplDN9qLmc27AfhnedO9QKlBhRDLwivqv0D""#, r#"YCDFjWplDN9qLmc27AfhnedO9QKlBhRDLwivqv0D"#),
        ]),
    ),
    (
        "zendesk-secret-key",
        Lines(&[
            (r#"zendesk_token = "0xtr5qswa8e47bdtgblhkwf0qm6umw1flw9wuja7""#, r#"0xtr5qswa8e47bdtgblhkwf0qm6umw1flw9wuja7"#),
        ]),
    ),
];

#[test]
fn every_gitleaks_rule_has_a_row() {
    assert_eq!(GITLEAKS_IDS.len(), 222);
    assert!(
        GITLEAKS_IDS.windows(2).all(|w| w[0] < w[1]),
        "ids not sorted or not unique"
    );
    let ids: Vec<&str> = ROWS.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, GITLEAKS_IDS, "a rule without its row, or out of order");
    let skipped: Vec<&str> = ROWS
        .iter()
        .filter(|(_, c)| matches!(c, Skip(_)))
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(skipped, ["pkcs12-file"], "rules left out");
}

#[test]
fn masks_each_gitleaks_rule_sample() {
    let mut wrong = Vec::new();
    for (id, case) in ROWS {
        let lines = match case {
            Lines(lines) => *lines,
            Skip(why) => {
                assert!(!why.is_empty(), "{id}: left out without a reason");
                continue;
            }
        };
        assert!(!lines.is_empty(), "{id}: no sample");
        for (line, secret) in lines {
            assert!(line.contains(secret), "{id}: {secret} not in {line}");
            let want = line.replacen(secret, MASK, 1);
            let got = redact(line);
            if got != want {
                wrong.push(format!(
                    "{id}:\n  in:   {line}\n  got:  {got}\n  want: {want}"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{}\n{} wrong",
        wrong.join("\n"),
        wrong.len()
    );
}

/// What the broader of the rules above must leave alone: `-u` and `-H`
/// outside credentials, names with `key`/`token`/`api` that hold no secret,
/// values that are words, counts, versions, paths or low-entropy, `s.` and
/// digits that are not Vault or Facebook tokens, a ConfigMap's data.
#[test]
fn leaves_look_alikes_of_the_broad_rules() {
    let mut wrong = Vec::new();
    for keep in [
        "git push -u origin main",
        "docker run -u 1000:1000 --rm image:latest",
        "sort -u names.txt | curl -X POST -d @- https://example.com/in",
        r#"curl -H "Content-Type: application/json" -H "X-Request-Id: 0123456789abcdef" https://example.com"#,
        r#"curl -u "myusername" http://localhost:15130/api/check_user/"#,
        "max_tokens = 4096",
        r#""input_tokens": 1234567890"#,
        r#""api_version": "2024-10-21-preview""#,
        "primary_key = order_id_20240101",
        "key_id: 3f2a9c1e7b6d5a4f",
        "token_url = https://oauth2.example.com/token",
        "secret_name = prod-db-credentials",
        "session_token: aaaaaaaaaaaaaaaa1",
        "key_path=/home/user/.ssh/id_ed25519",
        "the token: a_long_word_without_digits",
        "monkey = 9f8e7d6c5b4a39281706",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "config.s.abcdefghijklmnopqrstuvwx",
        "order 1234567890123456 | shipped",
        "kind: ConfigMap\ndata:\n  settings: dGhpcyBpcyBub3QgYSBzZWNyZXQ=\n",
        "kind: Secret\nmetadata:\n  name: x\n---\nkind: ConfigMap\ndata:\n  settings: dGhpcyBpcyBub3QgYSBzZWNyZXQ=\n",
    ] {
        let got = redact(keep);
        if got != keep {
            wrong.push(format!("{keep} -> {got}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The harmless-name check looks at the name before the value only, not at
/// an earlier assignment on the same line.
#[test]
fn generic_judges_each_name_alone() {
    assert_eq!(
        redact("key_file=a.pem token=Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB"),
        "key_file=a.pem token=[REDACTED]"
    );
    let keep = "public_key = 9f8e7d6c5b4a39281706aabb";
    assert_eq!(redact(keep), keep);
}

/// A Secret's `stringData` and block values are masked line by line, its
/// keys and comments kept.
#[test]
fn masks_every_value_of_a_kubernetes_secret() {
    let doc = "apiVersion: v1\nkind: Secret\nstringData:\n  user: admin\n  # the key\n  cert: |\n    MIIBszCCAVmgAwIBAgIU\n    Zm9vYmFyYmF6\ntype: Opaque\n";
    let want = "apiVersion: v1\nkind: Secret\nstringData:\n  user: [REDACTED]\n  # the key\n  cert: |\n    [REDACTED]\n    [REDACTED]\ntype: Opaque\n";
    assert_eq!(redact(doc), want);
}

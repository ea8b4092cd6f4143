//! Masking of common credential patterns in text written out by `looptune import`.

use regex::Regex;
use std::sync::OnceLock;

/// What a masked credential becomes.
const MASK: &str = "[REDACTED]";

/// gitleaks' further rules for tokens that carry their own prefix or shape
/// (no name needed): rule id and the token's shape. Each must stand alone,
/// with no letter, digit, `_` or `-` on either side. (Slack's configuration
/// tokens, `xoxe…`, are masked by the `xox` rule above.)
const PREFIXED: &[(&str, &str)] = &[
    (
        "1password-secret-key",
        r#"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"#,
    ),
    ("alibaba-access-key-id", r#"LTAI(?i:[a-z0-9]{20})"#),
    ("clickhouse-cloud-api-secret-key", r#"4b1d[A-Za-z0-9]{38}"#),
    ("artifactory-api-key", r#"AKCp[A-Za-z0-9]{69}"#),
    ("artifactory-reference-token", r#"cmVmd[A-Za-z0-9]{59}"#),
    (
        "authress-service-client-access-key",
        r#"(?:sc|ext|scauth|authress)_(?i:[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.)acc[_-](?i:[a-z0-9-]{10,32}\.[a-z0-9+/_=-]{30,120})"#,
    ),
    (
        "aws-amazon-bedrock-api-key-long-lived",
        r#"ABSK[A-Za-z0-9+/]{109,269}={0,2}"#,
    ),
    (
        "aws-amazon-bedrock-api-key-short-lived",
        r#"bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%]*"#,
    ),
    (
        "azure-ad-client-secret",
        r#"[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34}"#,
    ),
    (
        "dynatrace-api-token",
        r#"dt0c01\.(?i:[a-z0-9]{24}\.[a-z0-9]{64})"#,
    ),
    ("easypost-test-api-token", r#"EZTK(?i:[a-z0-9]{54})"#),
    // An app id, `|` (or `%7C` escaped, the `%` as gitleaks has it) and the app secret.
    (
        "facebook-access-token",
        r#"\d{15,16}(?:\||%7[Cc]|%)[0-9A-Za-z_-]{27,40}"#,
    ),
    (
        "facebook-page-access-token",
        r#"EAA[MC](?i:[a-z0-9]{100,})"#,
    ),
    (
        "flutterwave-public-key",
        r#"FLWPUBK_TEST-(?i:[a-h0-9]{32})-X"#,
    ),
    (
        "flutterwave-encryption-key",
        r#"FLWSECK_TEST-(?i:[a-h0-9]{12})"#,
    ),
    (
        "gitlab-feature-flag-client-token",
        r#"glffct-[0-9a-zA-Z_\-]{20}"#,
    ),
    ("gitlab-oauth-app-secret", r#"gloas-[0-9a-zA-Z_\-]{64}"#),
    ("gitlab-rrt", r#"GR1348941[\w-]{20}"#),
    ("gitlab-session-cookie", r#"_gitlab_session=[0-9a-z]{32}"#),
    ("grafana-api-key", r#"eyJrIjoi[A-Za-z0-9]{70,400}={0,3}"#),
    (
        "intra42-client-secret",
        r#"s-s4t2(?:ud|af)-(?i:[a-f0-9]{64})"#,
    ),
    // A JWT base64-encoded once more (`eyJ` becomes `ZXlK`).
    ("jwt-base64", r#"ZXlK[A-Za-z0-9/+_-]{40,}={0,2}"#),
    (
        "maxmind-license-key",
        r#"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk"#,
    ),
    (
        "microsoft-teams-webhook",
        r#"https://[a-z0-9]+\.webhook\.office\.com/webhookb2/[a-z0-9]{8}-(?:[a-z0-9]{4}-){3}[a-z0-9]{12}@[a-z0-9]{8}-(?:[a-z0-9]{4}-){3}[a-z0-9]{12}/IncomingWebhook/[a-z0-9]{32}/[a-z0-9]{8}-(?:[a-z0-9]{4}-){3}[a-z0-9]{12}"#,
    ),
    ("notion-api-token", r#"ntn_[0-9]{11}[A-Za-z0-9]{35}"#),
    ("octopus-deploy-api-key", r#"API-[A-Z0-9]{26}"#),
    ("openshift-user-token", r#"sha256~[\w-]{43}"#),
    (
        "settlemint-application-access-token",
        r#"sm_aat_[a-zA-Z0-9]{16}"#,
    ),
    (
        "settlemint-personal-access-token",
        r#"sm_pat_[a-zA-Z0-9]{16}"#,
    ),
    (
        "settlemint-service-access-token",
        r#"sm_sat_[a-zA-Z0-9]{16}"#,
    ),
    (
        "sourcegraph-access-token",
        r#"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"#,
    ),
    (
        "stripe-access-token",
        r#"(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99}"#,
    ),
];

/// gitleaks' rules keyed by a name (`keywords`): the value's shape counts
/// only after the name, within the same assignment (`NAME... = VALUE`, `:`,
/// `=>`, `:=`, `||`, `,`), ended by a quote, space, `;` or the end, as
/// gitleaks anchors them. Rule id, the name (a regex), the value's shape.
const KEYED: &[(&str, &str, &str)] = &[
    ("adafruit-api-key", r#"adafruit"#, r#"([a-z0-9_-]{32})"#),
    ("adobe-client-id", r#"adobe"#, r#"([a-f0-9]{32})"#),
    ("airtable-api-key", r#"airtable"#, r#"([a-z0-9]{17})"#),
    ("algolia-api-key", r#"algolia"#, r#"([a-z0-9]{32})"#),
    ("alibaba-secret-key", r#"alibaba"#, r#"([a-z0-9]{30})"#),
    ("asana-client-id", r#"asana"#, r#"([0-9]{16})"#),
    ("asana-client-secret", r#"asana"#, r#"([a-z0-9]{32})"#),
    (
        "atlassian-api-token",
        r#"(?-i:ATLASSIAN|[Aa]tlassian)|(?-i:CONFLUENCE|[Cc]onfluence)|(?-i:JIRA|[Jj]ira)"#,
        r#"([a-z0-9]{20}[a-f0-9]{4})"#,
    ),
    ("beamer-api-token", r#"beamer"#, r#"(b_[a-z0-9=_\-]{44})"#),
    ("bitbucket-client-id", r#"bitbucket"#, r#"([a-z0-9]{32})"#),
    (
        "bitbucket-client-secret",
        r#"bitbucket"#,
        r#"([a-z0-9=_\-]{64})"#,
    ),
    ("bittrex-access-key", r#"bittrex"#, r#"([a-z0-9]{32})"#),
    ("bittrex-secret-key", r#"bittrex"#, r#"([a-z0-9]{32})"#),
    (
        "cisco-meraki-api-key",
        r#"(?-i:[Mm]eraki|MERAKI)"#,
        r#"(?-i:([0-9a-f]{40}))"#,
    ),
    ("cloudflare-api-key", r#"cloudflare"#, r#"([a-z0-9_-]{40})"#),
    (
        "cloudflare-global-api-key",
        r#"cloudflare"#,
        r#"([a-f0-9]{37})"#,
    ),
    ("codecov-access-token", r#"codecov"#, r#"([a-z0-9]{32})"#),
    (
        "cohere-api-token",
        r#"cohere|CO_API_KEY"#,
        r#"(?-i:([a-zA-Z0-9]{40}))"#,
    ),
    (
        "coinbase-access-token",
        r#"coinbase"#,
        r#"([a-z0-9_-]{64})"#,
    ),
    (
        "confluent-access-token",
        r#"confluent"#,
        r#"([a-z0-9]{16})"#,
    ),
    ("confluent-secret-key", r#"confluent"#, r#"([a-z0-9]{64})"#),
    (
        "contentful-delivery-api-token",
        r#"contentful"#,
        r#"([a-z0-9=_\-]{43})"#,
    ),
    ("datadog-access-token", r#"datadog"#, r#"([a-z0-9]{40})"#),
    (
        "defined-networking-api-token",
        r#"dnkey"#,
        r#"(dnkey-[a-z0-9=_\-]{26}-[a-z0-9=_\-]{52})"#,
    ),
    ("discord-api-token", r#"discord"#, r#"([a-f0-9]{64})"#),
    ("discord-client-id", r#"discord"#, r#"([0-9]{18})"#),
    (
        "discord-client-secret",
        r#"discord"#,
        r#"([a-z0-9=_\-]{32})"#,
    ),
    ("droneci-access-token", r#"droneci"#, r#"([a-z0-9]{32})"#),
    ("dropbox-api-token", r#"dropbox"#, r#"([a-z0-9]{15})"#),
    (
        "dropbox-long-lived-api-token",
        r#"dropbox"#,
        r#"([a-z0-9]{11}(AAAAAAAAAA)[a-z0-9\-_=]{43})"#,
    ),
    (
        "dropbox-short-lived-api-token",
        r#"dropbox"#,
        r#"(sl\.[a-z0-9\-=_]{135})"#,
    ),
    (
        "etsy-access-token",
        r#"(?-i:ETSY|[Ee]tsy)"#,
        r#"([a-z0-9]{24})"#,
    ),
    ("facebook-secret", r#"facebook"#, r#"([a-f0-9]{32})"#),
    ("fastly-api-token", r#"fastly"#, r#"([a-z0-9=_\-]{32})"#),
    ("finicity-api-token", r#"finicity"#, r#"([a-f0-9]{32})"#),
    ("finicity-client-secret", r#"finicity"#, r#"([a-z0-9]{20})"#),
    ("finnhub-access-token", r#"finnhub"#, r#"([a-z0-9]{20})"#),
    ("flickr-access-token", r#"flickr"#, r#"([a-z0-9]{32})"#),
    // Freemius' PHP SDK configuration (`"secret_key" => "sk_…"`).
    (
        "freemius-secret-key",
        r#"secret_key"#,
        r#"(sk_[!#-&(-~]{29})"#,
    ),
    (
        "freshbooks-access-token",
        r#"freshbooks"#,
        r#"([a-z0-9]{64})"#,
    ),
    ("gitter-access-token", r#"gitter"#, r#"([a-z0-9_-]{40})"#),
    (
        "gocardless-api-token",
        r#"gocardless"#,
        r#"(live_(?i)[a-z0-9\-_=]{40})"#,
    ),
    (
        "hubspot-api-key",
        r#"hubspot"#,
        r#"([0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12})"#,
    ),
    ("intercom-api-key", r#"intercom"#, r#"([a-z0-9=_\-]{60})"#),
    (
        "jfrog-api-key",
        r#"jfrog|artifactory|bintray|xray"#,
        r#"([a-z0-9]{73})"#,
    ),
    (
        "jfrog-identity-token",
        r#"jfrog|artifactory|bintray|xray"#,
        r#"([a-z0-9]{64})"#,
    ),
    (
        "kraken-access-token",
        r#"kraken"#,
        r#"([a-z0-9\/=_\+\-]{80,90})"#,
    ),
    ("kucoin-access-token", r#"kucoin"#, r#"([a-f0-9]{24})"#),
    (
        "kucoin-secret-key",
        r#"kucoin"#,
        r#"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"#,
    ),
    (
        "launchdarkly-access-token",
        r#"launchdarkly"#,
        r#"([a-z0-9=_\-]{40})"#,
    ),
    ("linear-client-secret", r#"linear"#, r#"([a-f0-9]{32})"#),
    (
        "linkedin-client-id",
        r#"linked[_-]?in"#,
        r#"([a-z0-9]{14})"#,
    ),
    (
        "linkedin-client-secret",
        r#"linked[_-]?in"#,
        r#"([a-z0-9]{16})"#,
    ),
    ("lob-api-key", r#"lob"#, r#"((live|test)_[a-f0-9]{35})"#),
    (
        "lob-pub-api-key",
        r#"lob"#,
        r#"((test|live)_pub_[a-f0-9]{31})"#,
    ),
    ("looker-client-id", r#"looker"#, r#"([a-z0-9]{20})"#),
    ("looker-client-secret", r#"looker"#, r#"([a-z0-9]{24})"#),
    (
        "mailchimp-api-key",
        r#"MailchimpSDK\.initialize|mailchimp"#,
        r#"([a-f0-9]{32}-us\d\d)"#,
    ),
    (
        "mailgun-private-api-token",
        r#"mailgun"#,
        r#"(key-[a-f0-9]{32})"#,
    ),
    ("mailgun-pub-key", r#"mailgun"#, r#"(pubkey-[a-f0-9]{32})"#),
    (
        "mailgun-signing-key",
        r#"mailgun"#,
        r#"([a-h0-9]{32}-[a-h0-9]{8}-[a-h0-9]{8})"#,
    ),
    (
        "mapbox-api-token",
        r#"mapbox"#,
        r#"(pk\.[a-z0-9]{60}\.[a-z0-9]{22})"#,
    ),
    (
        "mattermost-access-token",
        r#"mattermost"#,
        r#"([a-z0-9]{26})"#,
    ),
    (
        "messagebird-api-token",
        r#"message[_-]?bird"#,
        r#"([a-z0-9]{25})"#,
    ),
    (
        "messagebird-client-id",
        r#"message[_-]?bird"#,
        r#"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"#,
    ),
    (
        "netlify-access-token",
        r#"netlify"#,
        r#"([a-z0-9=_\-]{40,46})"#,
    ),
    (
        "new-relic-browser-api-token",
        r#"new-relic|newrelic|new_relic"#,
        r#"(NRJS-[a-f0-9]{19})"#,
    ),
    (
        "new-relic-insert-key",
        r#"new-relic|newrelic|new_relic"#,
        r#"(NRII-[a-z0-9-]{32})"#,
    ),
    (
        "new-relic-user-api-id",
        r#"new-relic|newrelic|new_relic"#,
        r#"([a-z0-9]{64})"#,
    ),
    (
        "nytimes-access-token",
        r#"nytimes|new-york-times,|newyorktimes"#,
        r#"([a-z0-9=_\-]{32})"#,
    ),
    (
        "okta-access-token",
        r#"(?-i:[Oo]kta|OKTA)"#,
        r#"(?-i:(00[\w=\-]{40}))"#,
    ),
    (
        "plaid-api-token",
        r#"plaid"#,
        r#"(access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"#,
    ),
    ("plaid-client-id", r#"plaid"#, r#"([a-z0-9]{24})"#),
    ("plaid-secret-key", r#"plaid"#, r#"([a-z0-9]{30})"#),
    (
        "privateai-api-token",
        r#"private[_-]?ai"#,
        r#"(?-i:([a-z0-9]{32}))"#,
    ),
    (
        "rapidapi-access-token",
        r#"rapidapi"#,
        r#"([a-z0-9_-]{50})"#,
    ),
    (
        "sendbird-access-id",
        r#"sendbird"#,
        r#"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"#,
    ),
    ("sendbird-access-token", r#"sendbird"#, r#"([a-f0-9]{40})"#),
    ("sentry-access-token", r#"sentry"#, r#"([a-f0-9]{64})"#),
    (
        "sidekiq-secret",
        r#"BUNDLE_ENTERPRISE__CONTRIBSYS__COM|BUNDLE_GEMS__CONTRIBSYS__COM"#,
        r#"([a-f0-9]{8}:[a-f0-9]{8})"#,
    ),
    (
        "snyk-api-token",
        r#"snyk[_.-]?(?:(?:api|oauth)[_.-]?)?(?:key|token)"#,
        r#"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"#,
    ),
    (
        "sonar-api-token",
        r#"sonar[_.-]?(login|token)"#,
        r#"((?:squ_|sqp_|sqa_)?[a-z0-9=_\-]{40})"#,
    ),
    // Sourcegraph's bare form (its `sgp_` ones are in PREFIXED): 40 hex
    // digits, a git hash's shape too, so only after the name.
    (
        "sourcegraph-access-token",
        r#"sourcegraph"#,
        r#"([a-f0-9]{40})"#,
    ),
    (
        "squarespace-access-token",
        r#"squarespace"#,
        r#"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"#,
    ),
    (
        "sumologic-access-id",
        r#"(?-i:[Ss]umo|SUMO)"#,
        r#"(?-i:(su[a-zA-Z0-9]{12}))"#,
    ),
    (
        "sumologic-access-token",
        r#"(?-i:[Ss]umo|SUMO)"#,
        r#"([a-z0-9]{64})"#,
    ),
    (
        "telegram-bot-api-token",
        r#"telegr"#,
        r#"([0-9]{5,16}:(?-i:A)[a-z0-9_\-]{34})"#,
    ),
    ("travisci-access-token", r#"travis"#, r#"([a-z0-9]{22})"#),
    ("twitch-api-token", r#"twitch"#, r#"([a-z0-9]{30})"#),
    ("twitter-access-secret", r#"twitter"#, r#"([a-z0-9]{45})"#),
    (
        "twitter-access-token",
        r#"twitter"#,
        r#"([0-9]{15,25}-[a-zA-Z0-9]{20,40})"#,
    ),
    ("twitter-api-key", r#"twitter"#, r#"([a-z0-9]{25})"#),
    ("twitter-api-secret", r#"twitter"#, r#"([a-z0-9]{50})"#),
    (
        "twitter-bearer-token",
        r#"twitter"#,
        r#"(A{22}[a-zA-Z0-9%]{80,100})"#,
    ),
    (
        "yandex-access-token",
        r#"yandex"#,
        r#"(t1\.[A-Z0-9a-z_-]+[=]{0,2}\.[A-Z0-9a-z_-]{86}[=]{0,2})"#,
    ),
    (
        "yandex-api-key",
        r#"yandex"#,
        r#"(AQVN[A-Za-z0-9_\-]{35,38})"#,
    ),
    (
        "yandex-aws-access-token",
        r#"yandex"#,
        r#"(YC[a-zA-Z0-9_\-]{38})"#,
    ),
    ("zendesk-secret-key", r#"zendesk"#, r#"([a-z0-9]{40})"#),
];

/// A keyed rule as one regex: the name and what leads to the value (`k`, kept),
/// the value (masked) and what ends it (`t`, kept).
/// ASCII classes and case folding (`(?i-u)`), as gitleaks' Go regexes have
/// them: Unicode `\w` and `(?i)` made these regexes several times slower
/// to build and run.
fn keyed(name: &str, value: &str) -> String {
    format!(
        r#"(?i-u)(?P<k>(?:{name})(?:[ \t\w.-]{{0,20}})[\s'"]{{0,3}}(?:=|>|:{{1,3}}=|\|\||:|=>|\?=|,)[\x60'"\s=]{{0,5}}){value}(?P<t>[\x60'"\s;]|\\[nr]|$)"#
    )
}

fn patterns() -> &'static [(Regex, &'static str)] {
    static P: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    P.get_or_init(|| {
        // After the gitleaks rule set (config/gitleaks.toml): the prefixed
        // token formats, JWTs, keyword-anchored secrets such as AWS secret
        // access keys, and credentials in URLs. `\b` cannot be used before a
        // prefix (`MY_sk-...`: `_` is a word character), so a leading group
        // `(^|[^A-Za-z0-9])` is kept and put back with `${1}`.
        const B: &str = r"(^|[^A-Za-z0-9])";
        let specs: Vec<(String, &str)> = vec![
            // PEM private keys first, with or without their END line (a
            // truncated log still leaks the key body).
            (
                r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|[A-Za-z0-9+/=\s:,-]*)".into(),
                MASK,
            ),
            // JSON Web Tokens (header.payload[.signature]).
            (
                format!(r"{B}eyJ[A-Za-z0-9_-]{{10,}}\.eyJ[A-Za-z0-9_-]{{10,}}\.?[A-Za-z0-9_\-+/=]*"),
                "${1}[REDACTED]",
            ),
            // OpenAI / Anthropic style keys (sk-..., sk-proj-..., sk-ant-...).
            (format!(r"{B}sk-[A-Za-z0-9_\-]{{16,}}"), "${1}[REDACTED]"),
            // Stripe secret and restricted keys.
            (format!(r"{B}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{10,}}"), "${1}[REDACTED]"),
            // An AWS access key id with its secret beside it (`AKIA…:SECRET`,
            // a credentials CSV's `AKIA…,SECRET`): no keyword names the
            // secret, the key id does. Before the key id alone, below.
            (
                format!(r#"{B}(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{{16}}(?P<s>["']?[ \t]*[:,;|/][ \t]*["']?|[ \t]+)[A-Za-z0-9/+]{{40}}(?P<t>[^A-Za-z0-9/+=]|$)"#),
                "${1}[REDACTED]${s}[REDACTED]${t}",
            ),
            // AWS access key ids.
            (format!(r"{B}(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{{16}}"), "${1}[REDACTED]"),
            // AWS secret access keys: 40 base64 characters after an AWS secret keyword.
            (
                r#"(?i)(aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key|aws_?secret)(["']?\s*[:=]\s*["']?)[A-Za-z0-9/+=]{40}"#.into(),
                "${1}${2}[REDACTED]",
            ),
            // GitHub tokens.
            (format!(r"{B}gh[pousr]_[A-Za-z0-9]{{30,}}"), "${1}[REDACTED]"),
            (format!(r"{B}github_pat_[A-Za-z0-9_]{{22,}}"), "${1}[REDACTED]"),
            // GitLab, npm, PyPI, Hugging Face tokens.
            // (A routable token ends in `.` and nine more characters.)
            (format!(r"{B}glpat-[A-Za-z0-9_\-]{{20,}}(?:\.[0-9a-z]{{9}})?"), "${1}[REDACTED]"),
            (format!(r"{B}npm_[A-Za-z0-9]{{36}}"), "${1}[REDACTED]"),
            (format!(r"{B}pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{{50,}}"), "${1}[REDACTED]"),
            (format!(r"{B}hf_[A-Za-z]{{34}}"), "${1}[REDACTED]"),
            // Slack tokens and webhooks.
            // (A configuration access token is `xoxe.` and a `xoxb-`/`xoxp-` token.)
            (format!(r"{B}(?:xoxe\.)?xox[abposre]-[A-Za-z0-9\-]{{8,}}"), "${1}[REDACTED]"),
            (
                r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}".into(),
                MASK,
            ),
            // A Telegram bot token in a Bot API URL
            // (`https://api.telegram.org/bot<token>/getMe`, `/file/bot<token>/…`):
            // gitleaks' keyed rule wants a `telegr…` name assigned to it,
            // which a URL never has. A token standing alone stays keyed.
            (
                r"(?i)(/bot)[0-9]{5,16}:(?-i:A)[A-Za-z0-9_\-]{34}(?P<t>[^A-Za-z0-9_\-]|$)".into(),
                "${1}[REDACTED]${t}",
            ),
            // Google API keys and OAuth access tokens.
            (format!(r"{B}AIza[0-9A-Za-z_\-]{{35}}"), "${1}[REDACTED]"),
            (format!(r"{B}ya29\.[0-9A-Za-z_\-]{{20,}}"), "${1}[REDACTED]"),
            // SendGrid, Shopify, DigitalOcean, Databricks and Twilio keys, Stripe
            // webhook secrets (Anthropic admin keys are `sk-` keys, above).
            // SendGrid: `SG.` and 66 characters (dots included).
            (format!(r"{B}SG\.[A-Za-z0-9=_\-.]{{66}}"), "${1}[REDACTED]"),
            (format!(r"{B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}"), "${1}[REDACTED]"),
            (format!(r"{B}do[por]_v1_[a-f0-9]{{64}}"), "${1}[REDACTED]"),
            (format!(r"{B}dapi[a-f0-9]{{32}}(?:-\d)?"), "${1}[REDACTED]"),
            (format!(r"{B}SK[0-9a-fA-F]{{32}}"), "${1}[REDACTED]"),
            (format!(r"{B}whsec_[A-Za-z0-9+/=]{{24,}}"), "${1}[REDACTED]"),
            // Heroku: a UUID assigned to a heroku-named key (the key is
            // kept), and the `HRKU-AA` tokens.
            (
                r#"(?i)(heroku[\w.-]{0,20}[\s'"]{0,3}(?:=|:=|=>|:)[\s'"`]{0,5})[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"#.into(),
                "${1}[REDACTED]",
            ),
            (format!(r"{B}HRKU-AA[0-9A-Za-z_\-]{{58}}"), "${1}[REDACTED]"),
            // Azure storage account keys and shared access keys in
            // connection strings (the key name is kept).
            (r"(?i)(AccountKey=)[A-Za-z0-9+/]{86}==".into(), "${1}[REDACTED]"),
            (r"(?i)(SharedAccessKey=)[A-Za-z0-9+/]{42,43}=".into(), "${1}[REDACTED]"),
            // More prefixed formats of gitleaks' rule set: GitLab's other
            // tokens, Slack app tokens, age, Doppler, Postman, Linear,
            // HashiCorp Vault and Terraform, Docker, Grafana, PlanetScale,
            // RubyGems, Square, Groq, Perplexity, Hugging Face org, Atlassian,
            // Fly.io, 1Password service accounts, Airtable, Cloudflare origin
            // CA, Adobe, New Relic, Brevo, Pulumi, Prefect, ReadMe, Scalingo,
            // Duffel, EasyPost, Frame.io, Flutterwave, Shippo, Typeform,
            // Clojars, Infracost, Harness, Sentry.
            (format!(r"{B}gl(?:ptt|dt|rt|cbt|ft|soat|imt|agent)-[A-Za-z0-9_\-]{{20,}}(?:\.[0-9a-z]{{9}})?"), "${1}[REDACTED]"),
            (format!(r"{B}xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"), "${1}[REDACTED]"),
            (format!(r"{B}AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{{58}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}dp\.(?:pt|st|sa|ct|scim|audit)\.[a-z0-9]{{40,44}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}PMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}lin_api_[a-z0-9]{{40}}"), "${1}[REDACTED]"),
            (format!(r"{B}hv[sb]\.[A-Za-z0-9_\-]{{90,300}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}[a-z0-9]{{14}}\.atlasv1\.[a-z0-9\-_=]{{60,70}}"), "${1}[REDACTED]"),
            (format!(r"{B}dckr_pat_[A-Za-z0-9_\-]{{27,}}"), "${1}[REDACTED]"),
            (format!(r"{B}glc_[A-Za-z0-9+/]{{32,400}}={{0,2}}"), "${1}[REDACTED]"),
            (format!(r"{B}glsa_[A-Za-z0-9]{{32}}_[A-Fa-f0-9]{{8}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.\-]{{32,64}}"), "${1}[REDACTED]"),
            (format!(r"{B}rubygems_[a-f0-9]{{48}}"), "${1}[REDACTED]"),
            (format!(r"{B}(?:EAAA|sq0atp-)[0-9A-Za-z_\-]{{22,60}}"), "${1}[REDACTED]"),
            (format!(r"{B}sq0csp-[0-9A-Za-z_\-]{{43}}"), "${1}[REDACTED]"),
            (format!(r"{B}gsk_[A-Za-z0-9]{{52}}"), "${1}[REDACTED]"),
            (format!(r"{B}pplx-[A-Za-z0-9]{{48}}"), "${1}[REDACTED]"),
            (format!(r"{B}api_org_[A-Za-z]{{34}}"), "${1}[REDACTED]"),
            (format!(r"{B}ATATT3[A-Za-z0-9_\-=]{{186}}"), "${1}[REDACTED]"),
            (format!(r"{B}fo1_[\w\-]{{43}}"), "${1}[REDACTED]"),
            (format!(r"{B}fm[12][ar]?_[A-Za-z0-9+/]{{100,}}={{0,3}}"), "${1}[REDACTED]"),
            (format!(r"{B}ops_eyJ[A-Za-z0-9+/]{{250,}}={{0,3}}"), "${1}[REDACTED]"),
            (format!(r"{B}pat[A-Za-z0-9]{{14}}\.[a-f0-9]{{64}}"), "${1}[REDACTED]"),
            (format!(r"{B}v1\.0-[a-f0-9]{{24}}-[a-f0-9]{{146}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}p8e-[a-z0-9]{{32}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}NRAK-[a-z0-9]{{27}}"), "${1}[REDACTED]"),
            (format!(r"{B}xkeysib-[a-f0-9]{{64}}-[A-Za-z0-9]{{16}}"), "${1}[REDACTED]"),
            (format!(r"{B}pul-[a-f0-9]{{40}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}pnu_[a-z0-9]{{36}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}rdme_[a-z0-9]{{70}}"), "${1}[REDACTED]"),
            (format!(r"{B}tk-us-[\w\-]{{48}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}duffel_(?:test|live)_[a-z0-9_\-=]{{43}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}EZAK[a-z0-9]{{54}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}fio-u-[a-z0-9\-_=]{{64}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}FLWSECK_TEST-[a-h0-9]{{32}}-X"), "${1}[REDACTED]"),
            (format!(r"(?i){B}shippo_(?:live|test)_[a-f0-9]{{40}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}tfp_[a-z0-9\-_.=]{{59}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}CLOJARS_[a-z0-9]{{60}}"), "${1}[REDACTED]"),
            (format!(r"{B}ico-[A-Za-z0-9]{{32}}"), "${1}[REDACTED]"),
            (format!(r"{B}(?:pat|sat)\.[A-Za-z0-9_\-]{{22}}\.[A-Za-z0-9]{{24}}\.[A-Za-z0-9]{{20}}"), "${1}[REDACTED]"),
            (format!(r"{B}sntr[ysu]s?_[A-Za-z0-9=_+/]{{40,}}"), "${1}[REDACTED]"),
        ];
        let mut specs = specs;
        specs.extend(PREFIXED.iter().map(|(_, token)| {
            (
                format!(r"(^|[^A-Za-z0-9_\-])(?:{token})(?P<t>[^A-Za-z0-9_\-]|$)"),
                "${1}[REDACTED]${t}",
            )
        }));
        // Keyed rules before the URL, header and generic ones below.
        specs.extend(
            KEYED
                .iter()
                .map(|(_, name, value)| (keyed(name, value), "${k}[REDACTED]${t}")),
        );
        let rest: Vec<(String, &str)> = vec![
            // Sidekiq's gem server credentials: the user is half the secret.
            (
                r"(?i)\b(https?://)[a-f0-9]{8}:[a-f0-9]{8}(@(?:gems|enterprise)\.contribsys\.com)".into(),
                "${1}[REDACTED]${2}",
            ),
            // Passwords in URLs (scheme://user:password@host): the user is kept.
            (
                r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@]*:)[^\s@/]+@".into(),
                "${1}[REDACTED]@",
            ),
            // A credential header given to curl (`-H 'Authorization: …'`,
            // `--header "X-Api-Key: …"`), the header's name and scheme kept.
            // Any command's `-H` counts: the header says what the value is.
            (
                r#"(?i)((?:^|[ \t\n])(?:-H|--header)(?:=|[ \t]{0,5})["'](?:authorization:[ \t]{0,5}(?:(?:basic|bearer|(?:api-)?token)[ \t]+)?|(?:x-(?:[a-z]+-)?)?(?:api-?)?(?:key|token):[ \t]{0,5}))[\w=~@.+/-]{8,}(["'])"#.into(),
                "${1}[REDACTED]${2}",
            ),
            // curl's `-u`/`--user` credentials (`user:password`, both masked:
            // either may be the secret), up to five lines after `curl`.
            (
                r#"(\bcurl\b(?:[^\n]*\n){0,5}?[^\n]*?[ \t](?:-u|--user)(?:=|[ \t]{0,5}))(?:"[^"\n]*:[^"\n]*"|'[^'\n]*:[^'\n]*'|(?:"[^"\n]{3,}"|'[^'\n]{3,}'|[\w$@.-]+):(?:"[^"\n]{3,}"|'[^'\n]{3,}'|[\w${}@.!~-]+))(?P<t>\s|$)"#.into(),
                "${1}[REDACTED]${t}",
            ),
            // NuGet's stored source password.
            (
                r#"(?i)(<add key="(?:ClearText)?Password"\s*value=")[^"]{8,}(")"#.into(),
                "${1}[REDACTED]${2}",
            ),
            // HashiCorp Vault's legacy service token, `s.` and 24 characters,
            // standing after a space, quote, `=`, `:` or `,`.
            (
                r#"(^|[\s'"\x60=:(,>])s\.[A-Za-z0-9]{24}(?P<t>[\s'"\x60;,)<]|\\[nr]|$)"#.into(),
                "${1}[REDACTED]${t}",
            ),
            // Bearer and Basic credentials in headers; the scheme word is kept.
            (
                r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]{16,}=*".into(),
                "$1 [REDACTED]",
            ),
            (
                r"(?i)(authorization[\x22']?\s*[:=]\s*[\x22']?basic)\s+[A-Za-z0-9+/]{8,}=*".into(),
                "$1 [REDACTED]",
            ),
            // Generic assignments to secret-named keys (gitleaks' generic-api-key,
            // narrowed to an explicit `=` or `:` and 8+ characters).
            // The key may carry a prefix (`DATABASE_PASSWORD`: `\b` alone
            // never matched inside one identifier).
            (
                r#"(?i)\b([\w.-]*?(?:(?:api|access|auth|secret|private|client)[_-]?(?:key|token|secret)|password|passwd|pwd))(["']?\s*[:=]\s*["']?)[^\s"',;]{8,}"#.into(),
                "${1}${2}[REDACTED]",
            ),
        ];
        specs.extend(rest);
        specs
            .iter()
            .map(|(p, r)| (Regex::new(p).expect("valid credential pattern"), *r))
            .collect()
    })
}

/// `text` with credentials replaced by `[REDACTED]`: API keys and tokens
/// (`sk-…`, `AKIA…`, `ghp_…`, `xox…`, `AIza…`, `glpat-…`, ...), JWTs, AWS
/// secret access keys, passwords in URLs, bearer tokens, secret-named
/// assignments and PEM private key blocks (with or without their END line),
/// curl's `-u`/`-H` credentials and a Kubernetes Secret's data: gitleaks'
/// default rule set but `pkcs12-file` (see `redact/gitleaks.rs`).
pub fn redact(text: &str) -> String {
    let mut out = std::borrow::Cow::Borrowed(text);
    for (re, rep) in patterns() {
        if re.is_match(&out) {
            out = std::borrow::Cow::Owned(re.replace_all(&out, *rep).into_owned());
        }
    }
    if let Some(masked) = generic(&out) {
        out = std::borrow::Cow::Owned(masked);
    }
    if let Some(masked) = kubernetes_secret(&out) {
        out = std::borrow::Cow::Owned(masked);
    }
    out.into_owned()
}

/// What a PEM private key's body may hold (base64, blanks, and the
/// `Proc-Type: 4,ENCRYPTED` / `DEK-Info:` headers of an encrypted key), as
/// the single-text rule above masks it.
const PEM_BODY: &str = r"[A-Za-z0-9+/=\s:,-]";

/// [`redact`] for one text of a stream that an agent wrote in chunks (a
/// model turn's `content` records, its `thought` records): a PEM private
/// key split across chunks is masked in every chunk, not only in the one
/// that holds its BEGIN line. `pem_open` carries, from one chunk to the
/// next, whether the key begun in an earlier chunk has not ended yet.
pub fn redact_chunk(text: &str, pem_open: &mut bool) -> String {
    static RE: OnceLock<(Regex, Regex, Regex, Regex)> = OnceLock::new();
    let (to_end, body, begin, end) = RE.get_or_init(|| {
        let re = |p: &str| Regex::new(p).expect("valid PEM pattern");
        (
            // The rest of the key through its END line, or through what is
            // left of an END line cut by the chunk: the dashes closing it
            // (after `KEY` or `BLOCK`, or the chunk's first characters).
            // Base64 has no `-`; `DEK-Info:` and `Proc-Type:` have letters after theirs.
            re(&format!(
                r"\A(?P<k>(?:{PEM_BODY}*?[YK])?-{{1,5}})(?:[^-A-Za-z0-9+/=]|\z)"
            )),
            re(&format!(r"\A{PEM_BODY}*")),
            re(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----"),
            re(r"-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----"),
        )
    });
    let mut masked = String::new();
    let mut rest = text;
    if *pem_open {
        let (upto, closed) = match to_end.captures(text).and_then(|c| c.name("k")) {
            Some(m) => (m.end(), true),
            None => {
                let m = body.find(text).map_or(0, |m| m.end());
                // Body to the chunk's end: the key goes on in the next one.
                (m, m < text.len())
            }
        };
        let part = &text[..upto];
        if part.trim().is_empty() {
            masked.push_str(part);
        } else {
            masked.push_str(MASK);
        }
        rest = &text[upto..];
        *pem_open = !closed;
        if !closed {
            return masked;
        }
    }
    // A key that begins here and runs to the chunk's end without its END
    // line goes on in the next chunk (this one's part is masked by `redact`).
    *pem_open = begin.find_iter(rest).last().is_some_and(|m| {
        let after = &rest[m.end()..];
        !end.is_match(after) && body.find(after).is_some_and(|b| b.end() == after.len())
    });
    masked.push_str(&redact(rest));
    masked
}

/// gitleaks' generic-api-key: a value assigned to a name with `access`,
/// `auth`, `api`, `credential`, `creds`, `key`, `passw(or)d`, `secret` or
/// `token` in it, masked only when it looks random (not letters and `_.-`
/// alone, Shannon entropy of at least 3.5 bits a character, as gitleaks
/// asks) and the name is not one of the harmless ones (`key_id`,
/// `primary_key`, `token_url`, `secret_name`, `csrf_token`...).
fn generic(text: &str) -> Option<String> {
    static RE: OnceLock<(Regex, Regex)> = OnceLock::new();
    let (re, harmless) = RE.get_or_init(|| {
        (
            Regex::new(
                r#"(?i-u)(?P<k>(?:access|auth|(?-i:[Aa]pi|API)|credential|creds|key|passw(?:or)?d|secret|token)[ \t\w.-]{0,20}[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5})(?P<v>[\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})(?:[\x60'"\s;]|\\[nr]|$)"#,
            )
            .expect("valid generic pattern"),
            Regex::new(
                r"(?i)(?:access(?:ibility|or)|access[_.-]?id|random[_.-]?access|api[_.-]?(?:id|name|version)|rapid|capital|author|credentials?[_.-]?id|withcredentials|(?:bucket|foreign|hot|idx|natural|primary|pub(?:lic)?|schema|sequence)[_.-]?key|key[_.-]?(?:alias|board|code|frame|id|length|mesh|name|pair|press(?:ed)?|ring|selector|signature|size|stone|storetype|word|up|down|left|right)|key(?:store|tab)[_.-]?(?:file|path)|monkey|turkey|keying|secret[_.-]?(?:length|name|size)|csrf[_.-]?token|(?:api|credentials|token)[_.-]?(?:endpoint|ur[il])|public[_.-]?token|(?:key|token)[_.-]?file)",
            )
            .expect("valid generic allowlist"),
        )
    });
    if !re.is_match(text) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for c in re.captures_iter(text) {
        let (k, v) = (c.name("k").expect("k"), c.name("v").expect("v"));
        // The whole name (`primary_key`, `MY_API_VERSION`): the word
        // characters, `.` and `-` right before the keyword, up to 50.
        let before = &text.as_bytes()[..k.start()];
        let lead = before
            .iter()
            .rev()
            .take(50)
            .take_while(|b| b.is_ascii_alphanumeric() || b"_.-".contains(b))
            .count();
        let from = k.start() - lead;
        let value = v.as_str();
        if value
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b"_.-".contains(&b))
            || entropy(value) < 3.5
            || harmless.is_match(&text[from..k.end()])
        {
            continue;
        }
        out.push_str(&text[last..v.start()]);
        out.push_str(MASK);
        last = v.end();
    }
    if last == 0 {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// Shannon entropy of `s` in bits per byte.
fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// gitleaks' kubernetes-secret-yaml: in a YAML document with `kind: Secret`,
/// every value under its `data:` or `stringData:` (the lines indented
/// deeper than that key) is masked; keys and comments are kept.
fn kubernetes_secret(text: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let kind =
        RE.get_or_init(|| Regex::new(r#"(?i)\bkind:[ \t]*["']?secret\b"#).expect("valid pattern"));
    if !kind.is_match(text) {
        return None;
    }
    let indent = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut mask = |out: &mut String, line: &str, from: usize| {
        // `line[from..]` is the value: its surrounding blanks are kept.
        let value = &line[from..];
        let lead = value.len() - value.trim_start().len();
        let trail = value.len() - value.trim_end().len();
        out.push_str(&line[..from + lead]);
        out.push_str(MASK);
        out.push_str(&line[line.len() - trail..]);
        changed = true;
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    // Document by document (`---` lines), so a ConfigMap beside a Secret keeps its data.
    for doc in lines.split_inclusive(|l| l.trim_end() == "---") {
        let secret = doc.iter().any(|l| kind.is_match(l));
        // The `data:` key's indent, and a block scalar's (`key: |`) inside it.
        let (mut data, mut block): (Option<usize>, Option<usize>) = (None, None);
        for &line in doc {
            let body = line.trim_start_matches([' ', '\t']);
            let depth = indent(line);
            if let Some(d) = data {
                if body.trim().is_empty() || body.starts_with('#') {
                    out.push_str(line);
                    continue;
                }
                if block.is_some_and(|k| depth > k) {
                    mask(&mut out, line, line.len() - body.len());
                    continue;
                }
                block = None;
                if depth > d {
                    if let Some(at) = body.find(':') {
                        let value = body[at + 1..].trim();
                        if matches!(value, "|" | ">" | "|-" | ">-" | "|+" | ">+") {
                            block = Some(depth);
                        } else if !value.is_empty() && value != "\"\"" && value != "''" {
                            mask(&mut out, line, line.len() - body.len() + at + 1);
                            continue;
                        }
                    }
                    out.push_str(line);
                    continue;
                }
                data = None;
            }
            if secret && matches!(body.trim_end(), "data:" | "stringData:") {
                data = Some(depth);
            }
            out.push_str(line);
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod gitleaks;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_common_credentials() {
        let cases = [
            (
                "key sk-ant-api03-abcdefghijklmnopqrstuv end",
                "key [REDACTED] end",
            ),
            ("AKIAABCDEFGHIJKLMNOP", "[REDACTED]"),
            ("t=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "t=[REDACTED]"),
            ("xoxb-1234567890-abcdef", "[REDACTED]"),
            ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "[REDACTED]"),
            (
                "Authorization: Bearer abcdefghijklmnop.qrstuv",
                "Authorization: Bearer [REDACTED]",
            ),
            (
                "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nxyz\n-----END RSA PRIVATE KEY-----\nb",
                "a\n[REDACTED]\nb",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
        assert_eq!(redact("sk-short and plain text"), "sk-short and plain text");
    }

    /// The four kinds issue #31 found in clear, as the issue gave them.
    #[test]
    fn masks_what_issue_31_found_in_clear() {
        let sg = format!("SG.{}", "aB3-_x.Yz9".repeat(6) + "Qw12Er");
        assert_eq!(sg.len(), 69);
        let azure = format!(
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={}==;EndpointSuffix=core.windows.net",
            "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw"
        );
        let cases = [
            (format!("key {sg} end"), "key [REDACTED] end".to_string()),
            (
                "HEROKU_API_KEY=832d2129-a846-4e27-99f4-7004b6ad53ef".into(),
                "HEROKU_API_KEY=[REDACTED]".into(),
            ),
            (
                r#"const HEROKU_KEY = "63866443-cb87-446f-8bf0-80e9be787301""#.into(),
                r#"const HEROKU_KEY = "[REDACTED]""#.into(),
            ),
            (
                azure.clone(),
                "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED];EndpointSuffix=core.windows.net".into(),
            ),
            (
                "DATABASE_PASSWORD=xK9#mP2$vL7@qR4".into(),
                "DATABASE_PASSWORD=[REDACTED]".into(),
            ),
            (
                "export db.admin_pwd: 'hunter2-hunter2'".into(),
                "export db.admin_pwd: '[REDACTED]'".into(),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(&input), want, "{input}");
        }
    }

    /// One example of each further prefixed rule, in the shape gitleaks'
    /// own samples take (prefix and character class at the rule's length).
    #[test]
    fn masks_each_further_prefixed_rule() {
        let r = |c: &str, n: usize| c.repeat(n.div_ceil(c.len()))[..n].to_string();
        let samples = [
            format!("glptt-{}", r("a1B2", 40)),
            "xapp-1-A0123BCDEF-1234567890123-abcdef0123456789".into(),
            format!("AGE-SECRET-KEY-1{}", r("QPZRY9X8GF", 58)),
            format!("dp.pt.{}", r("a1b2c3", 43)),
            format!("PMAK-{}-{}", r("a1f2", 24), r("b3c4", 34)),
            format!("lin_api_{}", r("a1z9", 40)),
            format!("hvs.{}", r("Ab1_-", 95)),
            format!("{}.atlasv1.{}", r("a1b2", 14), r("x9y8", 64)),
            format!("dckr_pat_{}", r("Ab1_", 27)),
            format!("glc_{}", r("eyJr", 40)),
            format!("glsa_{}_{}", r("Ab12", 32), r("ab12", 8)),
            format!("pscale_tkn_{}", r("Ab1_", 40)),
            format!("rubygems_{}", r("a1f2", 48)),
            format!("sq0atp-{}", r("Ab1_", 22)),
            format!("sq0csp-{}", r("Ab1_", 43)),
            format!("gsk_{}", r("Ab12", 52)),
            format!("pplx-{}", r("Ab12", 48)),
            format!("api_org_{}", r("AbCd", 34)),
            format!("ATATT3{}", r("Ab1_", 186)),
            format!("fo1_{}", r("Ab1_", 43)),
            format!("fm2_{}", r("Ab1+", 120)),
            format!("ops_eyJ{}", r("Ab1+", 260)),
            format!("pat{}.{}", r("Ab12", 14), r("a1f2", 64)),
            format!("v1.0-{}-{}", r("a1f2", 24), r("b3c4", 146)),
            format!("p8e-{}", r("a1z9", 32)),
            format!("NRAK-{}", r("A1Z9", 27)),
            format!("xkeysib-{}-{}", r("a1f2", 64), r("Ab12", 16)),
            format!("pul-{}", r("a1f2", 40)),
            format!("pnu_{}", r("a1z9", 36)),
            format!("rdme_{}", r("a1z9", 70)),
            format!("tk-us-{}", r("Ab1_", 48)),
            format!("duffel_test_{}", r("a1_-", 43)),
            format!("EZAK{}", r("a1z9", 54)),
            format!("fio-u-{}", r("a1_-", 64)),
            format!("FLWSECK_TEST-{}-X", r("a1h2", 32)),
            format!("shippo_live_{}", r("a1f2", 40)),
            format!("tfp_{}", r("a1_.", 59)),
            format!("CLOJARS_{}", r("a1z9", 60)),
            format!("ico-{}", r("Ab12", 32)),
            format!("pat.{}.{}.{}", r("Ab1_", 22), r("Ab12", 24), r("Ab12", 20)),
            format!("sntrys_{}", r("eyJ0", 60)),
            format!("HRKU-AA{}", r("Ab1_", 58)),
            format!(
                "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey={}=",
                r("Ab1+", 43)
            ),
        ];
        for secret in samples {
            let out = redact(&format!("x {secret} y"));
            assert!(out.contains("[REDACTED]"), "{secret}: {out}");
            assert!(!out.contains(&secret), "{secret} left in clear: {out}");
        }
    }

    /// The leaks issue #16 found, one per rule family.
    #[test]
    fn masks_what_the_issue_found_in_clear() {
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        let cases = [
            (format!("token {jwt} end"), "token [REDACTED] end".to_string()),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
                "aws_secret_access_key = [REDACTED]".into(),
            ),
            (
                "AWS_SECRET_ACCESS_KEY=\"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"".into(),
                "AWS_SECRET_ACCESS_KEY=\"[REDACTED]\"".into(),
            ),
            (
                "git clone https://bob:hunter2secret@example.com/r.git".into(),
                "git clone https://bob:[REDACTED]@example.com/r.git".into(),
            ),
            (
                "postgres://admin:p4ss@db:5432/x".into(),
                "postgres://admin:[REDACTED]@db:5432/x".into(),
            ),
            (
                "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmUAAAAEbm9uZQ".into(),
                "key:\n[REDACTED]".into(),
            ),
            (
                "OPENAI_API_KEY_sk-proj-abcdefghijklmnopqrstuv".into(),
                "OPENAI_API_KEY_[REDACTED]".into(),
            ),
            (
                "export MY_TOKEN=glpat-abcdefghij0123456789".into(),
                "export MY_TOKEN=[REDACTED]".into(),
            ),
            (
                "password: correct-horse-battery".into(),
                "password: [REDACTED]".into(),
            ),
            (
                "Authorization: Basic dXNlcjpwYXNzd29yZA==".into(),
                "Authorization: Basic [REDACTED]".into(),
            ),
            (
                "ya29.a0AfH6SMBabcdefghijklmnopqrstu".into(),
                "[REDACTED]".into(),
            ),
            (
                format!("k={}", "shpat_0123456789abcdef0123456789abcdef"),
                "k=[REDACTED]".into(),
            ),
            (
                format!("SG.{}.{}", "a".repeat(22), "b".repeat(43)),
                "[REDACTED]".into(),
            ),
            (
                format!("DO_TOKEN:dop_v1_{}", "0".repeat(64)),
                "DO_TOKEN:[REDACTED]".into(),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(&input), want, "{input}");
        }
        // Ordinary prose and code survive.
        for keep in [
            "heroku_dyno = web.1",
            "AccountKey=short",
            "sq0atp-short",
            "max_tokens: 4096",
            "see https://example.com/a:b@c",
            "the password field is required",
            "ask-for-help",
        ] {
            assert_eq!(redact(keep), keep);
        }
    }

    /// Issue #42's item 18: a Telegram bot token in a Bot API URL and an
    /// AWS secret written after its key id were left in clear.
    #[test]
    fn masks_a_bot_api_url_and_a_key_id_with_its_secret() {
        let token = "123456789:AAHk7Jz9Qw3ErTy6Ui0Op5As4Df8Gh2Jk1L";
        let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        let cases = [
            (
                format!("curl https://api.telegram.org/bot{token}/getMe"),
                "curl https://api.telegram.org/bot[REDACTED]/getMe".to_string(),
            ),
            (
                format!("GET /file/bot{token}/photos/1.jpg"),
                "GET /file/bot[REDACTED]/photos/1.jpg".into(),
            ),
            (
                format!("AKIAIOSFODNN7EXAMPLE:{secret}"),
                "[REDACTED]:[REDACTED]".into(),
            ),
            (
                format!("creds AKIAIOSFODNN7EXAMPLE:{secret} ok"),
                "creds [REDACTED]:[REDACTED] ok".into(),
            ),
            (
                format!("AKIAIOSFODNN7EXAMPLE,{secret}\n"),
                "[REDACTED],[REDACTED]\n".into(),
            ),
            (
                format!("\"AKIAIOSFODNN7EXAMPLE\", \"{secret}\""),
                "\"[REDACTED]\", \"[REDACTED]\"".into(),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(&input), want, "{input}");
        }
        // The key id alone, and a token with no Bot API path, as before.
        assert_eq!(redact("AKIAIOSFODNN7EXAMPLE: done"), "[REDACTED]: done");
        let note = format!("note = \"{token}\"");
        assert_eq!(redact(&note), note);
    }

    /// A 13-line PEM key (BEGIN, 11 body lines, END).
    fn pem_key() -> String {
        let mut k = String::from("-----BEGIN RSA PRIVATE KEY-----\n");
        for i in 0..11 {
            k.push_str(&format!("MIIEow{i:02}{}\n", "AbCd+/90".repeat(7)));
        }
        k.push_str("-----END RSA PRIVATE KEY-----");
        k
    }

    /// Issue #42's item 18: a key streamed in two chunks leaked the second
    /// chunk's body lines and the END line.
    #[test]
    fn masks_a_key_split_across_chunks() {
        let key = pem_key();
        let lines: Vec<&str> = key.lines().collect();
        assert_eq!(lines.len(), 13);
        // Split at every line and inside lines: no body line survives anywhere.
        for cut in 1..key.len() {
            let (a, b) = key.split_at(cut);
            if !a.contains("-----BEGIN RSA PRIVATE KEY-----") {
                continue;
            }
            let mut open = false;
            let first = redact_chunk(&format!("Here it is:\n{a}"), &mut open);
            let second = redact_chunk(&format!("{b}\nKeep it safe."), &mut open);
            let both = format!("{first}|{second}");
            for line in &lines[1..] {
                // (Fragments of a line cut in two are checked whole.)
                assert!(!both.contains(line), "cut {cut}: {line} in {both}");
            }
            assert!(first.starts_with("Here it is:\n[REDACTED]"), "{first}");
            assert!(
                second.ends_with("[REDACTED]\nKeep it safe."),
                "cut {cut}: {second}"
            );
            assert!(!open, "cut {cut}");
        }
        // Three chunks: the middle one is all body.
        let (a, rest) = key.split_at(200);
        let (b, c) = rest.split_at(300);
        let mut open = false;
        assert_eq!(redact_chunk(a, &mut open), "[REDACTED]");
        assert!(open);
        assert_eq!(redact_chunk(b, &mut open), "[REDACTED]");
        assert!(open);
        assert_eq!(
            redact_chunk(&format!("{c} done."), &mut open),
            "[REDACTED] done."
        );
        assert!(!open);
        // A whole key in one chunk closes there; the next chunk is prose.
        let mut open = false;
        assert_eq!(redact_chunk(&key, &mut open), "[REDACTED]");
        assert!(!open);
        assert_eq!(redact_chunk("Done now.", &mut open), "Done now.");
        // Chunks without keys are masked as `redact` masks them.
        let mut open = false;
        assert_eq!(
            redact_chunk("t=ghp_abcdefghijklmnopqrstuvwxyz0123456789", &mut open),
            "t=[REDACTED]"
        );
        assert!(!open);
    }

    /// Every keyed rule masks a value of its shape after its name, and
    /// leaves the same value alone when no name of the rule is near.
    #[test]
    fn masks_each_keyed_rule_only_after_its_name() {
        let samples: &[(&str, &str, &str)] = &[
            (
                "adafruit-api-key",
                r#"adafruit_token = "a4hzjcih8oijcdio8270nfhbzvmnvzxp""#,
                r#"a4hzjcih8oijcdio8270nfhbzvmnvzxp"#,
            ),
            (
                "adobe-client-id",
                r#"adobe_token = "007bbf5e0e6ac800750419b24346940d""#,
                r#"007bbf5e0e6ac800750419b24346940d"#,
            ),
            (
                "airtable-api-key",
                r#"airtable_token = "tl98sflmbxgzstmh3""#,
                r#"tl98sflmbxgzstmh3"#,
            ),
            (
                "algolia-api-key",
                r#"algolia_token = "mv2zd9hrghmmvkj4d56rx5ch5i5bq54w""#,
                r#"mv2zd9hrghmmvkj4d56rx5ch5i5bq54w"#,
            ),
            (
                "alibaba-secret-key",
                r#"alibaba_token = "pagys2lcihdnmtl939676zo7m3t3ui""#,
                r#"pagys2lcihdnmtl939676zo7m3t3ui"#,
            ),
            (
                "asana-client-id",
                r#"asana_token = "5185346920163236""#,
                r#"5185346920163236"#,
            ),
            (
                "asana-client-secret",
                r#"asana_token = "tn1t8prcc4rq8m1xnzc2ympnuwtxhnep""#,
                r#"tn1t8prcc4rq8m1xnzc2ympnuwtxhnep"#,
            ),
            (
                "atlassian-api-token",
                r#"atlassian_token = "452rl0ce4jt4aaryrstp3611""#,
                r#"452rl0ce4jt4aaryrstp3611"#,
            ),
            (
                "beamer-api-token",
                r#"beamer_token = "b_j8ugmbx85t47qtyzn9o0dppd0urg9dup51jdtuc0o828""#,
                r#"b_j8ugmbx85t47qtyzn9o0dppd0urg9dup51jdtuc0o828"#,
            ),
            (
                "bitbucket-client-id",
                r#"bitbucket_token = "jeb542r44avpkf3wdzuym0od2c02zi7u""#,
                r#"jeb542r44avpkf3wdzuym0od2c02zi7u"#,
            ),
            (
                "bitbucket-client-secret",
                r#"bitbucket_token = "1p9qf3ditmiy3orvv0ur20veloqkhgtr21mf6gv854wj14jdquut9duho96lqi8t""#,
                r#"1p9qf3ditmiy3orvv0ur20veloqkhgtr21mf6gv854wj14jdquut9duho96lqi8t"#,
            ),
            (
                "bittrex-access-key",
                r#"bittrex_token = "y28uqekjj48j13ll36iwy5m4va5xmi4t""#,
                r#"y28uqekjj48j13ll36iwy5m4va5xmi4t"#,
            ),
            (
                "bittrex-secret-key",
                r#"bittrex_token = "kng35wieskegbdwlpex00t7dtzgegzk6""#,
                r#"kng35wieskegbdwlpex00t7dtzgegzk6"#,
            ),
            (
                "cisco-meraki-api-key",
                r#"meraki_token = "951b24c93a77fbdd5807604386f7be59eb78b8ea""#,
                r#"951b24c93a77fbdd5807604386f7be59eb78b8ea"#,
            ),
            (
                "cloudflare-api-key",
                r#"cloudflare_token = "ym108cb38v740f635979bap6dzszrf2pk2pzl5oi""#,
                r#"ym108cb38v740f635979bap6dzszrf2pk2pzl5oi"#,
            ),
            (
                "cloudflare-global-api-key",
                r#"cloudflare_token = "24b22da66b8d8d863fc45f352ede2cc09b380""#,
                r#"24b22da66b8d8d863fc45f352ede2cc09b380"#,
            ),
            (
                "codecov-access-token",
                r#"codecov_token = "qgdy7dccmjqh29ffeeiuysuhxdk185o4""#,
                r#"qgdy7dccmjqh29ffeeiuysuhxdk185o4"#,
            ),
            (
                "cohere-api-token",
                r#"cohere_token = "YR4oKHP0b0dSK1w7MHpNojdD6jKKM33hSIzOLxfW""#,
                r#"YR4oKHP0b0dSK1w7MHpNojdD6jKKM33hSIzOLxfW"#,
            ),
            (
                "coinbase-access-token",
                r#"coinbase_token = "q4v7s9z6wgy9djxajph5imwmvbqrzys7xnumf1uq8jp93ec7tw6vqqw61an2ue7t""#,
                r#"q4v7s9z6wgy9djxajph5imwmvbqrzys7xnumf1uq8jp93ec7tw6vqqw61an2ue7t"#,
            ),
            (
                "confluent-access-token",
                r#"confluent_token = "uxzazcaftn0141ul""#,
                r#"uxzazcaftn0141ul"#,
            ),
            (
                "confluent-secret-key",
                r#"confluent_token = "gdofmyf175r8kg8p1w0d6rqlbugvz96jxmsb1k2k969sm3e3c36vtlq60giubm4a""#,
                r#"gdofmyf175r8kg8p1w0d6rqlbugvz96jxmsb1k2k969sm3e3c36vtlq60giubm4a"#,
            ),
            (
                "contentful-delivery-api-token",
                r#"contentful_token = "dx5bts4ixgopby4prvryjt5uiw85mpwssq6q8drroel""#,
                r#"dx5bts4ixgopby4prvryjt5uiw85mpwssq6q8drroel"#,
            ),
            (
                "datadog-access-token",
                r#"datadog_token = "nw5d2dhnaw1dyyl43qs5wijsiip3ay9yr8fw6d53""#,
                r#"nw5d2dhnaw1dyyl43qs5wijsiip3ay9yr8fw6d53"#,
            ),
            (
                "defined-networking-api-token",
                r#"dnkey_token = "dnkey-ewt3ripw0asdzd87w6mlo0l2p3-oocg08plgy4i4lt7qb6rwndy8b725yx5kf8iu88ldy2ejnyfplyg""#,
                r#"dnkey-ewt3ripw0asdzd87w6mlo0l2p3-oocg08plgy4i4lt7qb6rwndy8b725yx5kf8iu88ldy2ejnyfplyg"#,
            ),
            (
                "discord-api-token",
                r#"discord_token = "6a5cc5d8f9a06e827bba8552b7c3af27ab4735e442a7a37896d11d1065c88be4""#,
                r#"6a5cc5d8f9a06e827bba8552b7c3af27ab4735e442a7a37896d11d1065c88be4"#,
            ),
            (
                "discord-client-id",
                r#"discord_token = "779452632044780505""#,
                r#"779452632044780505"#,
            ),
            (
                "discord-client-secret",
                r#"discord_token = "g426it9pehn8gbw55cmp2a14hbla0jai""#,
                r#"g426it9pehn8gbw55cmp2a14hbla0jai"#,
            ),
            (
                "droneci-access-token",
                r#"droneci_token = "kxlnv3vz61l1t6wf3zbbnx54qicwbpux""#,
                r#"kxlnv3vz61l1t6wf3zbbnx54qicwbpux"#,
            ),
            (
                "dropbox-api-token",
                r#"dropbox_token = "miyaq41uqvea7fi""#,
                r#"miyaq41uqvea7fi"#,
            ),
            (
                "dropbox-long-lived-api-token",
                r#"dropbox_token = "a3pgl1tipk5AAAAAAAAAA0ovumdt2dzb6t6jm6jmabspvicl51eik40himwcbb4x""#,
                r#"a3pgl1tipk5AAAAAAAAAA0ovumdt2dzb6t6jm6jmabspvicl51eik40himwcbb4x"#,
            ),
            (
                "dropbox-short-lived-api-token",
                r#"dropbox_token = "sl.4atoiehaq1dk8i194m1vuu5i1341l9jj0xp0tfc8hk4rhq51yvtloz89xseh5kulv9jm1h25aad24zt56fhe64iem6vam8k24bhbceuk3f40ebvrrlvw2gmidh79zsupznam6jj""#,
                r#"sl.4atoiehaq1dk8i194m1vuu5i1341l9jj0xp0tfc8hk4rhq51yvtloz89xseh5kulv9jm1h25aad24zt56fhe64iem6vam8k24bhbceuk3f40ebvrrlvw2gmidh79zsupznam6jj"#,
            ),
            (
                "etsy-access-token",
                r#"etsy_token = "1f1p8axq3yjvq1w6a8crs2lf""#,
                r#"1f1p8axq3yjvq1w6a8crs2lf"#,
            ),
            (
                "facebook-secret",
                r#"facebook_token = "1760708e7f059c56ade9200353479f04""#,
                r#"1760708e7f059c56ade9200353479f04"#,
            ),
            (
                "fastly-api-token",
                r#"fastly_token = "ery4hdtjm429nrxexvy1b37969esz3s0""#,
                r#"ery4hdtjm429nrxexvy1b37969esz3s0"#,
            ),
            (
                "finicity-api-token",
                r#"finicity_token = "6b28be943abafbb1cb6bf213fb13d611""#,
                r#"6b28be943abafbb1cb6bf213fb13d611"#,
            ),
            (
                "finicity-client-secret",
                r#"finicity_token = "vwv23z25pqwvok3oeto3""#,
                r#"vwv23z25pqwvok3oeto3"#,
            ),
            (
                "finnhub-access-token",
                r#"finnhub_token = "u6kq6s6du29pf833a69r""#,
                r#"u6kq6s6du29pf833a69r"#,
            ),
            (
                "flickr-access-token",
                r#"flickr_token = "clbh251j6yri028q1o8ja1et8dahtc8i""#,
                r#"clbh251j6yri028q1o8ja1et8dahtc8i"#,
            ),
            (
                "freemius-secret-key",
                r#""secret_key" => "sk_ubb4yN3mzqGR2x8#P7r5&@*xC$utE","#,
                r#"sk_ubb4yN3mzqGR2x8#P7r5&@*xC$utE"#,
            ),
            (
                "freshbooks-access-token",
                r#"freshbooks_token = "if3sry8yq5oe0qixdptqwbk0jd58haium6ji4uo48440vwn168vwfsflp9kn63x2""#,
                r#"if3sry8yq5oe0qixdptqwbk0jd58haium6ji4uo48440vwn168vwfsflp9kn63x2"#,
            ),
            (
                "gitter-access-token",
                r#"gitter_token = "g5eierjgkn3g0pbaewp9u8a9hw3spborcr58v5zp""#,
                r#"g5eierjgkn3g0pbaewp9u8a9hw3spborcr58v5zp"#,
            ),
            (
                "gocardless-api-token",
                r#"gocardless_token = "live_eqjbwt8hv6z0zftbwk6q8fhow8em65r91w3dnvib""#,
                r#"live_eqjbwt8hv6z0zftbwk6q8fhow8em65r91w3dnvib"#,
            ),
            (
                "hubspot-api-key",
                r#"hubspot_token = "8845DB31-A888-6145-21C4-02BC7B3F1F56""#,
                r#"8845DB31-A888-6145-21C4-02BC7B3F1F56"#,
            ),
            (
                "intercom-api-key",
                r#"intercom_token = "vxevm9zev32fhuo1me7z5ozdhn784ifig5iiogmck4bzsp9uozdt4a5i4pye""#,
                r#"vxevm9zev32fhuo1me7z5ozdhn784ifig5iiogmck4bzsp9uozdt4a5i4pye"#,
            ),
            (
                "jfrog-api-key",
                r#"jfrog_token = "s19oi5tf7vretvayua9cl9w0jvwa5o1u70zurkpt0tt280ku6w3p3gkr579r5jti2fmxbx1sf""#,
                r#"s19oi5tf7vretvayua9cl9w0jvwa5o1u70zurkpt0tt280ku6w3p3gkr579r5jti2fmxbx1sf"#,
            ),
            (
                "jfrog-identity-token",
                r#"jfrog_token = "sgcwap74clxfdbva00gpz16av3kh66xeiq9ijklofubiexl9khv376qyo8zmu28t""#,
                r#"sgcwap74clxfdbva00gpz16av3kh66xeiq9ijklofubiexl9khv376qyo8zmu28t"#,
            ),
            (
                "kraken-access-token",
                r#"kraken_token = "vwlv6z6m9siamjtlf9uk64km7i1br3ooerxdqsqh26l71vm3709h8uw1kbh0rfa38afp59spg9y94tux7""#,
                r#"vwlv6z6m9siamjtlf9uk64km7i1br3ooerxdqsqh26l71vm3709h8uw1kbh0rfa38afp59spg9y94tux7"#,
            ),
            (
                "kucoin-access-token",
                r#"kucoin_token = "635d9f6588f2e63b4e526b45""#,
                r#"635d9f6588f2e63b4e526b45"#,
            ),
            (
                "kucoin-secret-key",
                r#"kucoin_token = "d233b73d-6e86-a2ef-2b8a-1d7f969c8601""#,
                r#"d233b73d-6e86-a2ef-2b8a-1d7f969c8601"#,
            ),
            (
                "launchdarkly-access-token",
                r#"launchdarkly_token = "uyb16duutnh2fdnt14p9wheadjs4xsdrbitfxvt2""#,
                r#"uyb16duutnh2fdnt14p9wheadjs4xsdrbitfxvt2"#,
            ),
            (
                "linear-client-secret",
                r#"linear_token = "fcc3c1975edea342d8184f9f1a4b4f83""#,
                r#"fcc3c1975edea342d8184f9f1a4b4f83"#,
            ),
            (
                "linkedin-client-id",
                r#"linkedin_token = "alcjo9znw6u2p5""#,
                r#"alcjo9znw6u2p5"#,
            ),
            (
                "linkedin-client-secret",
                r#"linkedin_token = "vp2ueyqfidcm2oih""#,
                r#"vp2ueyqfidcm2oih"#,
            ),
            (
                "lob-api-key",
                r#"lob_token = "live_78db314ef913295827c0d910dd06c3c6f48""#,
                r#"live_78db314ef913295827c0d910dd06c3c6f48"#,
            ),
            (
                "lob-pub-api-key",
                r#"lob_token = "test_pub_240851ee1b066e716938e3d2a081acd""#,
                r#"test_pub_240851ee1b066e716938e3d2a081acd"#,
            ),
            (
                "looker-client-id",
                r#"looker_token = "l5fqt4wd84vssqkkggr6""#,
                r#"l5fqt4wd84vssqkkggr6"#,
            ),
            (
                "looker-client-secret",
                r#"looker_token = "ocl3p3inyg301umexqwirvc3""#,
                r#"ocl3p3inyg301umexqwirvc3"#,
            ),
            (
                "mailchimp-api-key",
                r#"mailchimp_token = "a9ec5d43b1dafe908388ce3e2f45b272-us12""#,
                r#"a9ec5d43b1dafe908388ce3e2f45b272-us12"#,
            ),
            (
                "mailgun-private-api-token",
                r#"mailgun_token = "key-4c59c6868ab3953bb041871bcffaf149""#,
                r#"key-4c59c6868ab3953bb041871bcffaf149"#,
            ),
            (
                "mailgun-pub-key",
                r#"mailgun_token = "pubkey-6cf8c47903bae6d5f23ed95779d22f21""#,
                r#"pubkey-6cf8c47903bae6d5f23ed95779d22f21"#,
            ),
            (
                "mailgun-signing-key",
                r#"mailgun_token = "1c7g943cd35437548eb44603f47h63g2-4c50518h-fb5b5414""#,
                r#"1c7g943cd35437548eb44603f47h63g2-4c50518h-fb5b5414"#,
            ),
            (
                "mapbox-api-token",
                r#"mapbox_token = "pk.f9414g54bjfysnma5hpv81wknbsafn7hzsr7uoa4c2a34jqe3f64ixnd2qva.q7hvlqkbminc9imuqa6yzc""#,
                r#"pk.f9414g54bjfysnma5hpv81wknbsafn7hzsr7uoa4c2a34jqe3f64ixnd2qva.q7hvlqkbminc9imuqa6yzc"#,
            ),
            (
                "mattermost-access-token",
                r#"mattermost_token = "whn6l36amqqw4ymsx3ygrbug0w""#,
                r#"whn6l36amqqw4ymsx3ygrbug0w"#,
            ),
            (
                "messagebird-api-token",
                r#"messagebird_token = "x6nzxxebzzyhduk45bethfuz4""#,
                r#"x6nzxxebzzyhduk45bethfuz4"#,
            ),
            (
                "messagebird-client-id",
                r#"messagebird_token = "2aeec156-ccf4-5735-b69e-8a22dbfeb5bd""#,
                r#"2aeec156-ccf4-5735-b69e-8a22dbfeb5bd"#,
            ),
            (
                "netlify-access-token",
                r#"netlify_token = "mf9nmwmtw0fc6t75mvvrbb37oouz4azwmp4jflemh""#,
                r#"mf9nmwmtw0fc6t75mvvrbb37oouz4azwmp4jflemh"#,
            ),
            (
                "new-relic-browser-api-token",
                r#"newrelic_token = "NRJS-ea8d5bec328be905949""#,
                r#"NRJS-ea8d5bec328be905949"#,
            ),
            (
                "new-relic-insert-key",
                r#"newrelic_token = "NRII-24cuzdom2n4hxl7suvectypkb9f56xqy""#,
                r#"NRII-24cuzdom2n4hxl7suvectypkb9f56xqy"#,
            ),
            (
                "new-relic-user-api-id",
                r#"new-relic_token = "0rre61jld9ao9zgko4m2l9dks0azvpt7gjglvwztgnuh6zw9fuyjthqy3rsudr8o""#,
                r#"0rre61jld9ao9zgko4m2l9dks0azvpt7gjglvwztgnuh6zw9fuyjthqy3rsudr8o"#,
            ),
            (
                "nytimes-access-token",
                r#"nytimes_token = "mz24jbheedpasjgafmqd40ruxm4a2cda""#,
                r#"mz24jbheedpasjgafmqd40ruxm4a2cda"#,
            ),
            (
                "okta-access-token",
                r#"okta_token = "00y2yatlq1bdpmdauzzig46vxtvsb16p9ym8otwxte""#,
                r#"00y2yatlq1bdpmdauzzig46vxtvsb16p9ym8otwxte"#,
            ),
            (
                "plaid-api-token",
                r#"plaid_token = "access-sandbox-d7f777c7-9f5f-697d-70c8-d5dc7c7546f8""#,
                r#"access-sandbox-d7f777c7-9f5f-697d-70c8-d5dc7c7546f8"#,
            ),
            (
                "plaid-client-id",
                r#"plaid_token = "y6n990t14evt2xac97i07cgw""#,
                r#"y6n990t14evt2xac97i07cgw"#,
            ),
            (
                "plaid-secret-key",
                r#"plaid_token = "umgq0lp6vpaf391zgcyp6hu0xb3qa3""#,
                r#"umgq0lp6vpaf391zgcyp6hu0xb3qa3"#,
            ),
            (
                "privateai-api-token",
                r#"privateai_token = "ntf0d9exrrmq29xfbf4detodewby4jm1""#,
                r#"ntf0d9exrrmq29xfbf4detodewby4jm1"#,
            ),
            (
                "rapidapi-access-token",
                r#"rapidapi_token = "e17d4uv76ro9c55scslwewb40tflov07o1nslrbwf47r5vm20j""#,
                r#"e17d4uv76ro9c55scslwewb40tflov07o1nslrbwf47r5vm20j"#,
            ),
            (
                "sendbird-access-id",
                r#"sendbird_token = "0eb9ee69-9e58-d2e4-252f-383f8e16e26c""#,
                r#"0eb9ee69-9e58-d2e4-252f-383f8e16e26c"#,
            ),
            (
                "sendbird-access-token",
                r#"sendbird_token = "e57eabd90724712c8c852ae7838cdd22f87ac1c9""#,
                r#"e57eabd90724712c8c852ae7838cdd22f87ac1c9"#,
            ),
            (
                "sentry-access-token",
                r#"sentry_token = "a367e39e5776458afd189bb82b953e8844974a3a4168b971d43bf9a38ab84a3b""#,
                r#"a367e39e5776458afd189bb82b953e8844974a3a4168b971d43bf9a38ab84a3b"#,
            ),
            (
                "sidekiq-secret",
                r#"BUNDLE_ENTERPRISE__CONTRIBSYS__COM_token = "54cc144e:18737b11""#,
                r#"54cc144e:18737b11"#,
            ),
            (
                "snyk-api-token",
                r#"snyk_token = "08b2f7fa-3c82-c676-4b4d-db71ba669e68""#,
                r#"08b2f7fa-3c82-c676-4b4d-db71ba669e68"#,
            ),
            (
                "sonar-api-token",
                r#"sonar_token = "squ_okwi4kabu5law4e3ctym7s4iuzlejfmi6hzhnoyh""#,
                r#"squ_okwi4kabu5law4e3ctym7s4iuzlejfmi6hzhnoyh"#,
            ),
            (
                "sourcegraph-access-token",
                r#"sourcegraph: 6d2FabeB6ADd229Bc199FabA28fD3efb57dF0bD3"#,
                r#"6d2FabeB6ADd229Bc199FabA28fD3efb57dF0bD3"#,
            ),
            (
                "squarespace-access-token",
                r#"squarespace_token = "977c138f-ba2f-dcad-ed31-e17830973c24""#,
                r#"977c138f-ba2f-dcad-ed31-e17830973c24"#,
            ),
            (
                "sumologic-access-id",
                r#"sumo_token = "suunEFPwpp0E9B""#,
                r#"suunEFPwpp0E9B"#,
            ),
            (
                "sumologic-access-token",
                r#"sumo_token = "ishkj6k3vyu4hruw4od6eip3z52uo0z1pyz476c14q0ixnntpoc6e7wnyue9yx0t""#,
                r#"ishkj6k3vyu4hruw4od6eip3z52uo0z1pyz476c14q0ixnntpoc6e7wnyue9yx0t"#,
            ),
            (
                "telegram-bot-api-token",
                r#"telegr_token = "596008:A3wnbq2s6ubfw73dctuwypcwsckku6nfj62""#,
                r#"596008:A3wnbq2s6ubfw73dctuwypcwsckku6nfj62"#,
            ),
            (
                "travisci-access-token",
                r#"travis_token = "o7gz4j7x402bi2it6z2lky""#,
                r#"o7gz4j7x402bi2it6z2lky"#,
            ),
            (
                "twitch-api-token",
                r#"twitch_token = "xhrqh3ub0c1dju7tx7j10lwgvofi36""#,
                r#"xhrqh3ub0c1dju7tx7j10lwgvofi36"#,
            ),
            (
                "twitter-access-secret",
                r#"twitter_token = "2a1ekg8xa4of5asj4xjgka3j7raxudpsw4hnxkj7s8sns""#,
                r#"2a1ekg8xa4of5asj4xjgka3j7raxudpsw4hnxkj7s8sns"#,
            ),
            (
                "twitter-access-token",
                r#"twitter_token = "6689988762228674-IUOZvcb5cvDhgmWkSqRgi""#,
                r#"6689988762228674-IUOZvcb5cvDhgmWkSqRgi"#,
            ),
            (
                "twitter-api-key",
                r#"twitter_token = "glv6n186tedqfobvczfjwaw0z""#,
                r#"glv6n186tedqfobvczfjwaw0z"#,
            ),
            (
                "twitter-api-secret",
                r#"twitter_token = "iydezmz98ks0zhqc5fdgi8v9ncqutmmtx1dknarc9cx22qpjxf""#,
                r#"iydezmz98ks0zhqc5fdgi8v9ncqutmmtx1dknarc9cx22qpjxf"#,
            ),
            (
                "twitter-bearer-token",
                r#"twitter_token = "AAAAAAAAAAAAAAAAAAAAAAp0f1sh0xRsHugAB9V1RsJNzhvu24CvW7vHvv8itTY7tes3mEqUa51M0qWs84MpWUk0VLRd174v4RjaBDY""#,
                r#"AAAAAAAAAAAAAAAAAAAAAAp0f1sh0xRsHugAB9V1RsJNzhvu24CvW7vHvv8itTY7tes3mEqUa51M0qWs84MpWUk0VLRd174v4RjaBDY"#,
            ),
            (
                "yandex-access-token",
                r#"yandex_token = "t1.C=.6OXfUgA8T4Ip7PSCeHQKVgr4jdrAU3d3qgugcjUAqvaEEiYVxAu87ReEU3uZwl44GhmM6CbcLIug5tCxLr0xP2=""#,
                r#"t1.C=.6OXfUgA8T4Ip7PSCeHQKVgr4jdrAU3d3qgugcjUAqvaEEiYVxAu87ReEU3uZwl44GhmM6CbcLIug5tCxLr0xP2="#,
            ),
            (
                "yandex-api-key",
                r#"yandex_token = "AQVNZ6V5qcjMOF0RDLwnv2ZcyTHmBx3ePUvDtSs6""#,
                r#"AQVNZ6V5qcjMOF0RDLwnv2ZcyTHmBx3ePUvDtSs6"#,
            ),
            (
                "yandex-aws-access-token",
                r#"yandex_token = "YCDFjWplDN9qLmc27AfhnedO9QKlBhRDLwivqv0D""#,
                r#"YCDFjWplDN9qLmc27AfhnedO9QKlBhRDLwivqv0D"#,
            ),
            (
                "zendesk-secret-key",
                r#"zendesk_token = "0xtr5qswa8e47bdtgblhkwf0qm6umw1flw9wuja7""#,
                r#"0xtr5qswa8e47bdtgblhkwf0qm6umw1flw9wuja7"#,
            ),
        ];
        let ids: Vec<&str> = KEYED.iter().map(|(id, _, _)| *id).collect();
        let mut wrong = Vec::new();
        for (id, line, value) in samples {
            assert!(ids.contains(id), "{id}: no such rule");
            let got = redact(line);
            if got.contains(value) || !got.contains(MASK) {
                wrong.push(format!("{id}: {line} -> {got}"));
            }
            let unnamed = format!("note = \"{value}\"");
            if redact(&unnamed) != unnamed {
                wrong.push(format!("{id}: masked without its name: {unnamed}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert_eq!(samples.len(), KEYED.len(), "a rule without a sample");
    }

    /// Every further prefixed rule masks a token of its shape standing
    /// alone, and not one glued inside a longer word.
    #[test]
    fn masks_each_prefixed_rule_standing_alone() {
        let samples: &[(&str, &str)] = &[
            (
                "1password-secret-key",
                r#"A3-A4HZJC-IH8OIJCDIO8-270NF-HBZVM-NVZXP"#,
            ),
            ("alibaba-access-key-id", r#"LTAInn09ddlwinjybf72nn1x"#),
            (
                "clickhouse-cloud-api-secret-key",
                r#"4b1dbRdW3rOcB7xLthrM4BTBGK1qPLkHigpN1bXD6z"#,
            ),
            (
                "artifactory-api-key",
                r#"AKCpMVp0OeCQVSVkZepp1U9NvGyxT5Ljn7i1rSFLMB6ymXs9GqZS6Tp14MHdMzVcZyDjtHRG3"#,
            ),
            (
                "artifactory-reference-token",
                r#"cmVmdoH9MMVKt2JeDfnygR3XnfolC2HfIzumsf1xBQfwyeWPAGYlScLCIHk3nD7n"#,
            ),
            (
                "authress-service-client-access-key",
                r#"sc_nmtl93.9676z.acc_7m3t3uixh7w.msykch1njpytn1t8prcc4rq8m1xnzc2"#,
            ),
            (
                "aws-amazon-bedrock-api-key-long-lived",
                r#"ABSKYtMPNUWTs9XHxNEP4nse4fc7pRqLaCEeJTze1AARYRwST46PlTZ5xOPmJ2oixU2GqktMBX6if8Treh82QTyYZrNj4OxaD0kP9tPD29ar6URGyj="#,
            ),
            (
                "aws-amazon-bedrock-api-key-short-lived",
                r#"bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29tDUP"#,
            ),
            (
                "azure-ad-client-secret",
                r#"UFW6Q~jXdtuZc7AoI3CIjebFZECrEWEQRa5R0U"#,
            ),
            (
                "dynatrace-api-token",
                r#"dt0c01.vpkf3wdzuym0od2c02zi7u1p.9qf3ditmiy3orvv0ur20veloqkhgtr21mf6gv854wj14jdquut9duho96lqi8ty2"#,
            ),
            (
                "easypost-test-api-token",
                r#"EZTK8uqekjj48j13ll36iwy5m4va5xmi4tkng35wieskegbdwlpex00t7d"#,
            ),
            (
                "facebook-access-token",
                r#"1308742762612587|rhoK1cbv0DOU_RTX_87O4MkX7AI"#,
            ),
            (
                "facebook-page-access-token",
                r#"EAACzgegzk6skcwe8jzsgupp4w701kqa9pnbjgrm5ow3ks3xorwr3vym108cb38v740f635979bap6dzszrf2pk2pzl5oi8rvcqrgbzz"#,
            ),
            (
                "flutterwave-public-key",
                r#"FLWPUBK_TEST-b69d6d8641fc23f130ede0ccg7b196g0-X"#,
            ),
            ("flutterwave-encryption-key", r#"FLWSECK_TEST-db48bbbge0d6"#),
            (
                "gitlab-feature-flag-client-token",
                r#"glffct-z5544R8koNRik7QNnQDW"#,
            ),
            (
                "gitlab-oauth-app-secret",
                r#"gloas-3TaUrRUyUveFuOHUeAxFQ1Q3IARmXCxfDe93tW9AACTT7IypEBn5MgulxOiGzCWp"#,
            ),
            ("gitlab-rrt", r#"GR13489416wgy9djxajph5imwmvbq"#),
            (
                "gitlab-session-cookie",
                r#"_gitlab_session=hpoixndkc5rkgy9fzt42xjmwlggmwr0d"#,
            ),
            (
                "grafana-api-key",
                r#"eyJrIjoic7kUEh1pT46UXZ8Au2ZCsoAFmlvTNabt6ebnUvv1LGm10vDOnF5MYFbkhtfrRiKrGipPb6W="#,
            ),
            (
                "intra42-client-secret",
                r#"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"#,
            ),
            (
                "jwt-base64",
                r#"ZXlKaGJHY2lPaUpJVXpJMU5pSXNJblI1Y0NJNklrcFhWQ0o5LmV5SnpkV0lpT2lJeE1qTTBOVFkzT0Rrd0luMA=="#,
            ),
            (
                "maxmind-license-key",
                r#"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"#,
            ),
            (
                "microsoft-teams-webhook",
                r#"https://5.webhook.office.com/webhookb2/d2dhnaw1-dyyl-43qs-5wij-siip3ay9yr8f@w6d53ewt-3rip-w0as-dzd8-7w6mlo0l2p3o/IncomingWebhook/ocg08plgy4i4lt7qb6rwndy8b725yx5k/f8iu88ld-y2ej-nyfp-lygy-awe8fw7h2k5b"#,
            ),
            (
                "notion-api-token",
                r#"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"#,
            ),
            (
                "octopus-deploy-api-key",
                r#"API-V0SXIVURA0AT124YHPPHO9NYWF"#,
            ),
            (
                "openshift-user-token",
                r#"sha256~33cju33rxj1njbqr28bwbug426it9pehn8gbw55cmp2"#,
            ),
            (
                "settlemint-application-access-token",
                r#"sm_aat_aBTERhOblSZaAj33"#,
            ),
            (
                "settlemint-personal-access-token",
                r#"sm_pat_Qk7dZr02mWvNc9Lx"#,
            ),
            (
                "settlemint-service-access-token",
                r#"sm_sat_H4tPq8sVb1XeRn6J"#,
            ),
            (
                "sourcegraph-access-token",
                r#"sgp_local_d7dfFD43cF2503B1da673EB560aAa3e80f16FA42"#,
            ),
            ("stripe-access-token", r#"sk_prod_8lvJjmYBZhC"#),
        ];
        let ids: Vec<&str> = PREFIXED.iter().map(|(id, _)| *id).collect();
        let mut wrong = Vec::new();
        for (id, token) in samples {
            assert!(ids.contains(id), "{id}: no such rule");
            let line = format!("export X=\"{token}\" # set");
            let got = redact(&line);
            if got != "export X=\"[REDACTED]\" # set" {
                wrong.push(format!("{id}: {line} -> {got}"));
            }
            let glued = format!("word{token}word");
            if redact(&glued) != glued {
                wrong.push(format!("{id}: masked inside a word: {glued}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert_eq!(samples.len(), PREFIXED.len(), "a rule without a sample");
    }
}

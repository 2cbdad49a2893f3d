export { bareHost, createCertificateAuthority, issueServerCertificate, type CertificateAuthorityOptions, type PemPair, type ServerCertificateOptions } from './certificates.js';
export { ensureDevelopmentCertificates, RENEW_BEFORE_DAYS, type DevelopmentCertificates } from './development-certificates.js';

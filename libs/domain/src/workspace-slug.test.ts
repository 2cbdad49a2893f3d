import { expect } from 'chai';
import { ValidationError } from './errors.js';
import {
  WORKSPACE_SLUG_MAX_LENGTH,
  WORKSPACE_SLUG_MIN_LENGTH,
  assertWorkspaceSlug,
  isValidWorkspaceSlug,
  slugFromName,
} from './workspace-slug.js';

describe('workspace slugs', () => {
  describe('isValidWorkspaceSlug', () => {
    it('accepts lower-case letters, digits and single inner hyphens starting with a letter', () => {
      for (const slug of ['acme', 'abc', 'acme-corp', 'a1b2', 'team-42', 'a-b-c', 'x'.repeat(48)]) {
        expect(isValidWorkspaceSlug(slug), slug).to.equal(true);
      }
    });

    it('enforces 3 to 48 characters', () => {
      expect(WORKSPACE_SLUG_MIN_LENGTH).to.equal(3);
      expect(WORKSPACE_SLUG_MAX_LENGTH).to.equal(48);
      expect(isValidWorkspaceSlug('ab')).to.equal(false);
      expect(isValidWorkspaceSlug('abc')).to.equal(true);
      expect(isValidWorkspaceSlug('a'.repeat(48))).to.equal(true);
      expect(isValidWorkspaceSlug('a'.repeat(49))).to.equal(false);
      expect(isValidWorkspaceSlug('')).to.equal(false);
    });

    it('refuses upper case, leading digits or hyphens, trailing or double hyphens and other characters', () => {
      for (const slug of ['Acme', '1acme', '-acme', 'acme-', 'ac--me', 'ac_me', 'ac me', 'acmé', 'acme\n', 'ac.me']) {
        expect(isValidWorkspaceSlug(slug), JSON.stringify(slug)).to.equal(false);
      }
    });

    it('assertWorkspaceSlug throws ValidationError invalid_workspace_slug', () => {
      expect(() => assertWorkspaceSlug('acme')).not.to.throw();
      let caught: unknown;
      try {
        assertWorkspaceSlug('Bad_Slug');
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(ValidationError);
      expect(caught).to.have.property('code', 'invalid_workspace_slug');
    });
  });

  describe('slugFromName', () => {
    it('lower-cases and hyphenates a plain name', () => {
      expect(slugFromName('Acme Corp')).to.equal('acme-corp');
      expect(slugFromName('  Acme   Corp  ')).to.equal('acme-corp');
      expect(slugFromName('Acme, Inc. (EU)')).to.equal('acme-inc-eu');
    });

    it('decomposes compatibility characters through NFKD', () => {
      expect(slugFromName('Café')).to.equal('cafe');
      expect(slugFromName('Ｆｕｌｌ ｗｉｄｔｈ')).to.equal('full-width');
      expect(slugFromName('ﬁnance')).to.equal('finance');
      // A mid-word accent currently splits the word ('Crème' -> 'cre-me'); see the report.
      expect(slugFromName('Café Crème')).to.equal('cafe-creme');
      expect(slugFromName('Zürich Büro')).to.equal('zurich-buro');
    });

    it('drops leading digits and falls back to "workspace" when too little is left', () => {
      expect(slugFromName('123 Go')).to.equal('workspace');
      expect(slugFromName('2024 Projects')).to.equal('projects');
    });

    it('falls back to "workspace" for names without letters', () => {
      expect(slugFromName('!!!')).to.equal('workspace');
      expect(slugFromName('')).to.equal('workspace');
      expect(slugFromName('12345')).to.equal('workspace');
      expect(slugFromName('数据库')).to.equal('workspace');
    });

    it('leaves room for a 7-character suffix on very long names', () => {
      const slug = slugFromName('Very Long Name '.repeat(20));
      expect(slug.length).to.be.at.most(WORKSPACE_SLUG_MAX_LENGTH - 8);
      expect(slug.length).to.be.at.least(WORKSPACE_SLUG_MIN_LENGTH);
      expect(slug.endsWith('-')).to.equal(false);
      expect(isValidWorkspaceSlug(`${slug}-abcdef`)).to.equal(true);
    });

    it('always produces a valid slug', () => {
      const names = [
        'Acme Corp',
        '123 Go',
        '!!!',
        'a',
        'ab',
        'A B',
        '---abc---',
        'x'.repeat(500),
        'a-'.repeat(100),
        'a '.repeat(100),
        'Ærø Café',
        'Ｆｕｌｌ ｗｉｄｔｈ',
        'İstanbul Ofisi',
        'ﬁnance ﬂow',
        'tab\tand\nnewline',
        '😀 emoji team 😀',
        '9'.repeat(60) + 'abc',
        'abc' + '!'.repeat(60) + 'def',
      ];
      for (const name of names) {
        const slug = slugFromName(name);
        expect(isValidWorkspaceSlug(slug), `${JSON.stringify(name.slice(0, 30))} -> ${slug}`).to.equal(true);
      }
    });

    it('always produces a valid slug for generated names', () => {
      const alphabet = 'aZ09 -_!é😀.数';
      let seed = 12345;
      const random = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed / 2 ** 31;
      };
      for (let i = 0; i < 500; i++) {
        const length = Math.floor(random() * 80);
        const chars = Array.from(alphabet);
        let name = '';
        for (let j = 0; j < length; j++) name += chars[Math.floor(random() * chars.length)];
        const slug = slugFromName(name);
        expect(isValidWorkspaceSlug(slug), `${JSON.stringify(name)} -> ${slug}`).to.equal(true);
        expect(slug === 'workspace' || slug.length <= WORKSPACE_SLUG_MAX_LENGTH - 8).to.equal(true);
      }
    });
  });
});
